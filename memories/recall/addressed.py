"""Whether a query talks to the assistant about the assistant: small talk ("how are you?",
"what's your name?", "do you like rainy days?", "are you a robot?"), a joke or a riddle asked
for, a greeting or a goodbye, or a model's note of one ("The user says hello", "The user asks
the assistant to tell a joke").

No memory answers such a query, yet it is close in meaning to many of them (a question about
someone's favourite season is close to the user's hobbies) and the question classifier often
finds it personal. Recall reads it by its words alone (recall._word_evidence): a memory that
holds them is found ("tell me a joke about penguins" for a user who loves penguins), the
rest is not. A query that speaks of the user ("my", "I", "we", in the languages of
entities.USER_WORDS) is never this: "do you remember my diet?" is about the user."""

import re

from memories.entities.names import fold
from memories.recall.entities import MODEL_USER_WORDS, USER_WORDS

# The first person that makes a query the user's; "me", "moi", "mir", "mich" are left out,
# for the user is the one told the joke ("tell me a joke", "me cuentas un chiste"), and so is
# "user", the framing of a model's note ("The user says hello").
_USERS = USER_WORDS - MODEL_USER_WORDS - {"me", "moi", "mir", "mich", "mimi"}
_WORD = re.compile(r"[\w']+")

_TO_THE_ASSISTANT = re.compile(
    "|".join(
        (
            # The assistant's own name, tastes, day or nature.
            r"\byour\s+(?:name|names|favou?rite|age|birthday|day|weekend|creator|maker|"
            r"hobbies|hobby|gender|pronouns|feelings)\b",
            r"\b(?:how|who|what|where)\s+are\s+you\b(?!\s+(?:going|gonna|able))",
            r"\bare\s+you\s+(?:a|an|real|human|alive|conscious|sentient|ok|okay|there|"
            r"happy|sad|tired|bored)\b",
            r"\bdo\s+you\s+(?:like|love|enjoy|prefer|ever|dream|feel|sleep|eat|get|"
            r"have\s+(?:a|any)\s+(?:favou?rite|feelings|name|hobbies|friends))\b",
            r"\byou(?:'re|\s+are)\s+(?:funny|smart|great|awesome|cool|amazing|the\s+best|"
            r"a\s+robot|an?\s+ai|hilarious|silly|weird|so\s+\w+)\b",
            r"\bhow'?s\s+(?:your|it\s+going|life)\b",
            r"\bwhat'?s\s+up\b",
            r"\bwho\s+(?:made|created|built|trained|programmed)\s+you\b",
            # A joke, a riddle, a pun, asked for.
            r"\b(?:tell|give|share)\s+(?:me|us)\s+(?:a|an|another|some|one)\s+(?:\w+\s+)?"
            r"(?:joke|jokes|riddle|riddles|pun|puns)(?:\s+about)?\b",
            r"\b(?:chiste|chistes|blague|blagues|witz|witze|barzelletta|barzellette|piada|"
            r"piadas)\b",
            # Greetings, thanks and goodbyes, and nothing else.
            r"^(?:hi|hello|hey|hiya|yo|good\s+(?:morning|afternoon|evening|night)|thanks|"
            r"thank\s+you|bye|goodbye|see\s+you|hola|buenos\s+dias|bonjour|salut|hallo|"
            r"guten\s+(?:morgen|tag|abend)|ciao|buongiorno|ola|bom\s+dia|hej|cze[sś][cć])"
            r"(?:[\s!,.?]+(?:there|again|friend|everyone|how\s+are\s+you|"
            r"how\s+are\s+you\s+doing))*[\s!,.?]*$",
            # The same in other languages: "ça va ?", "¿qué tal tu día?", "come stai?".
            r"\b(?:ca\s+va|comment\s+vas-tu|comment\s+allez-vous|que\s+tal\s+tu|como\s+estas|"
            r"come\s+va|come\s+stai|tudo\s+bem|wie\s+geht(?:'s|s|\s+es\s+dir)|jak\s+sie\s+masz|"
            r"habari\s+yako)\b",
            # A model's note of small talk.
            r"\bthe\s+user\s+(?:says|said|is\s+(?:just\s+)?saying)\s+(?:hello|hi|thanks|"
            r"goodbye|good\s+morning)",
            r"\bthe\s+user\s+asks\s+the\s+assistant\s+(?:to\s+tell|how\s+it|about\s+itself|"
            r"its\s+name|for\s+a\s+joke)",
            r"\bhow\s+the\s+assistant\s+is\b",
        )
    )
)


def to_the_assistant(query: str) -> str | None:
    """For a query that talks to the assistant about the assistant (see the module
    docstring), and not of the user, what is left of it without the small talk ("tell me a
    joke about penguins": "penguins"); else None."""
    folded = fold(query).replace("’", "'")
    if any(word in _USERS for word in _WORD.findall(folded)):
        return None
    if not _TO_THE_ASSISTANT.search(folded):
        return None
    return " ".join(_TO_THE_ASSISTANT.sub(" ", folded).split())
