"""Entity evidence: a query that names one of the user's entities (its name, an alias, its
relation: "Sofia", "my wife", "esposa") or a group of relations ("family", "kids", "pets",
"colleagues", "parents", and their words in other languages) brings that entity's memories
in as candidates, with evidence 1 for an entity named and GROUP_EVIDENCE for one of a group.
A query that names none changes nothing: one small query of the user's entities, then
nothing. A relation word names the user's relation only in a query about the user
(entity_evidence): the wife of Henry VIII is not the user's wife.

Relation words and group words are compared folded (case and accents aside) as whole words,
in the singular or the plural ("dogs", "wives"); in Japanese, inside the query."""

import json
import re
from collections.abc import Sequence
from uuid import UUID

from django.db import connection

from memories.entities.names import fold
from memories.models import CarrierIds, Entity, EntityKind

GROUP_EVIDENCE = 0.8
# A query of at most this many words is a search box's or a model's terse phrase ("dogs",
# "user family"): its relation words are the user's.
TERSE_WORDS = 3

PARTNERS = {"wife", "husband", "spouse", "partner", "girlfriend", "boyfriend", "fiance", "fiancee"}
KIDS = {"son", "daughter", "child", "kid", "stepson", "stepdaughter", "baby", "twin"}
PARENTS = {"mother", "father", "stepmother", "stepfather"}
SIBLINGS = {"sister", "brother", "stepsister", "stepbrother", "half-sister", "half-brother"}
GRANDPARENTS = {"grandmother", "grandfather"}
FAMILY = (
    PARTNERS
    | KIDS
    | PARENTS
    | SIBLINGS
    | GRANDPARENTS
    | {"grandson", "granddaughter", "grandchild", "aunt", "uncle", "cousin", "niece", "nephew"}
    | {"mother-in-law", "father-in-law", "sister-in-law", "brother-in-law"}
)
PETS = {"dog", "cat", "pet", "puppy", "kitten", "rabbit", "hamster", "parrot", "horse"}
COLLEAGUES = {"colleague", "coworker", "co-worker", "boss", "manager", "teammate", "employee"}


def _words_for(relations, words: str) -> dict[str, frozenset[str]]:
    named = frozenset({relations} if isinstance(relations, str) else relations)
    # Folded as queries are: "grand-mère" and "おばあちゃん" are found as folded.
    return dict.fromkeys((fold(word) for word in words.split()), named)


# A word a query may name a relation by, and the relations of entities it names: English
# words that name several ("spouse", "partner", "mom"), and the words of other languages
# (Spanish, Portuguese, French, German, Italian, Dutch, Polish, Swahili, Japanese; folded).
# Words that are everyday words of another language are left out: "kind", "chat", "cane",
# "chef", "patron", "prima", "primo", "team" ("what kind of music do I like?").
RELATION_WORDS: dict[str, frozenset[str]] = {
    **_words_for(
        {"wife", "spouse", "partner"},
        "wife esposa mulher femme frau moglie vrouw echtgenote zona mke 妻 奥さん 嫁",
    ),
    **_words_for(
        {"husband", "spouse", "partner"},
        "husband esposo marido mari ehemann mann marito echtgenoot maz mume 夫 旦那",
    ),
    **_words_for(
        {"wife", "husband", "spouse", "partner"},
        "spouse conjuge conjoint coniuge ehepartner malzonek",
    ),
    **_words_for(
        PARTNERS,
        "partner pareja companheiro companheira compagnon compagne compagno compagna "
        "lebensgefahrte lebensgefahrtin",
    ),
    **_words_for(
        {"girlfriend", "partner"},
        "girlfriend novia namorada copine freundin fidanzata vriendin dziewczyna 彼女",
    ),
    **_words_for(
        {"boyfriend", "partner"}, "boyfriend novio namorado copain fidanzato chłopak 彼氏"
    ),
    **_words_for(
        {"fiance", "fiancee", "partner"},
        "fiance fiancee prometido prometida noivo noiva verlobte verlobter promesso promessa "
        "verloofde narzeczony narzeczona 婚約者",
    ),
    **_words_for("son", "son hijo filho fils sohn figlio zoon syn 息子"),
    **_words_for("daughter", "daughter hija filha fille tochter figlia dochter corka 娘"),
    **_words_for(
        KIDS,
        "kid child nino nina crianca enfant bambino bambina dziecko mtoto 子供 子ども",
    ),
    **_words_for(
        {"twin"} | KIDS,
        "twin gemelo gemela gemeo gemea jumeau jumelle zwilling gemello gemella tweeling "
        "bliźniak 双子",
    ),
    **_words_for(
        "mother",
        "mother mom mum mommy mummy mama madre mae mere mutter mamma moeder matka 母 お母さん",
    ),
    **_words_for(
        "father",
        "father dad daddy papa padre pai pere vater babbo vader ojciec tata baba 父 お父さん",
    ),
    **_words_for("sister", "sister hermana irma soeur schwester sorella zus siostra dada 姉 妹"),
    **_words_for("brother", "brother hermano irmao frere bruder fratello broer brat kaka 兄 弟"),
    **_words_for(
        "grandmother",
        "grandmother grandma granny nana abuela avo grand-mere oma grossmutter nonna babcia "
        "祖母 おばあちゃん",
    ),
    **_words_for(
        "grandfather",
        "grandfather grandpa abuelo grand-pere opa grossvater nonno dziadek 祖父 おじいちゃん",
    ),
    **_words_for(
        {"niece", "nephew"},
        "niece nephew sobrina sobrino sobrinha sobrinho neveu nichte neffe nicht neef "
        "siostrzenica bratanek",
    ),
    **_words_for({"grandson", "grandchild"}, "grandson nieto petit-fils kleinzoon wnuk"),
    **_words_for(
        {"granddaughter", "grandchild"},
        "granddaughter nieta petite-fille enkelin kleindochter wnuczka",
    ),
    **_words_for({"grandson", "granddaughter", "grandchild"}, "grandchild grandkid mjukuu 孫"),
    # Italian "nipote" is a niece, a nephew or a grandchild.
    **_words_for({"niece", "nephew", "grandson", "granddaughter", "grandchild"}, "nipote"),
    **_words_for("aunt", "aunt tia tante zia"),
    **_words_for("uncle", "uncle tio oncle onkel zio oom"),
    **_words_for("cousin", "cousin cousine vetter cugino cugina"),
    **_words_for("dog", "dog puppy perro cao cachorro chien hund hond pies mbwa 犬"),
    **_words_for("cat", "cat kitten gato katze gatto kat kot paka 猫"),
    **_words_for(
        COLLEAGUES, "colleague coworker co-worker colega collegue kollege kollegin collega 同僚"
    ),
    **_words_for("boss", "boss jefe chefe capo baas szef 上司"),
}
# A group word, and the relations it gathers (a family's pets are family too).
GROUP_WORDS: dict[str, frozenset[str]] = {
    **_words_for(
        FAMILY | PETS, "family relatives familia famille familie famiglia gezin rodzina 家族"
    ),
    **_words_for(
        KIDS,
        "kids children childs twins hijos ninos filhos criancas enfants kinder kinderen figli "
        "bambini dzieci watoto 子供たち 子どもたち",
    ),
    **_words_for(PARENTS, "parents padres pais eltern genitori ouders rodzice wazazi 両親"),
    **_words_for(SIBLINGS, "siblings hermanos irmaos freres geschwister fratelli rodzenstwo 兄弟"),
    **_words_for(
        GRANDPARENTS,
        "grandparents abuelos avos grands-parents grosseltern nonni grootouders dziadkowie 祖父母",
    ),
    **_words_for(
        {"grandson", "granddaughter", "grandchild"},
        "grandchildren grandkids nietos netos petits-enfants enkelkinder kleinkinderen wnuki "
        "nipoti wajukuu 孫たち",
    ),
    **_words_for(
        PETS,
        "pets mascotas mascota animais animaux haustiere huisdieren animali zwierzeta ペット",
    ),
    **_words_for(
        COLLEAGUES,
        "colleagues coworkers co-workers colegas companeros collegues kollegen collegas "
        "colleghi wspolpracownicy 同僚たち",
    ),
    # A wedding anniversary is the partner's: the word names them without naming them.
    **_words_for(PARTNERS, "anniversary aniversario hochzeitstag jahrestag anniversario trouwdag"),
}
# Words that make the relation words of a query the user's: the first person (pronouns and
# possessives) in the languages above, and "user", as a model writes of the user ("the
# user's wife", "user spouse"). "Who was the wife of Henry VIII?" has none, and is not.
USER_WORDS = frozenset(
    (
        "i'm im i've i'd i'll me my mine we we're us our ours user users "
        "yo mi mis nosotros nosotras nuestro nuestra nuestros nuestras "
        "eu meu minha meus minhas nos nosso nossa nossos nossas "
        "je j moi mon ma mes nous notre "
        "ich mich mir mein meine meinen meinem meiner meines wir uns unser unsere unseren "
        "unserem unserer "
        "io mio mia miei mie noi nostro nostra nostri nostre "
        "ik mijn wij onze ons "
        "moj moja moje moi mojego mojej nasz nasza nasze naszej naszego "
        "mimi yangu wangu wetu yetu sisi"
    ).split()
)
# "The dogs", "la nonna", "os cachorros": a definite article before a relation word makes it
# the user's too, unless a word of possession follows ("the wife of Henry VIII", "la moglie
# di Enrico VIII"). ("a", "de" and "i" are left out: articles in one language, other words
# in another.)
DEFINITE_ARTICLES = frozenset(
    "the el la los las o os as le les l der die das den dem des il lo gli het".split()
)
# (Portuguese "do" is left out: "what does my wife do?")
OF_WORDS = frozenset("of de di du des von van del della dello degli da das dos".split())
# "a dog", "a family": a relation word after an indefinite article is anyone's, in a query
# that is not the user's ("How many legs does a dog have?"). (Portuguese "a" is "the" too:
# "a esposa de Dom Pedro" is someone else's anyway.)
INDEFINITE_ARTICLES = frozenset("a an un une una uno um uma ein eine einen einem einer een".split())
# "Napoleon's brother", "Henry VIII's first wife": a possessive at most this many words before
# a relation word makes it the possessor's. Contractions ("what's", "it's") possess nothing.
POSSESSOR_REACH = 2
NOT_POSSESSORS = frozenset(
    "it's what's who's that's there's here's he's she's where's how's let's when's why's".split()
)
# "user" as a model writes of the user, in the languages above: it makes the relation words
# just after it the user's ("user spouse", "dada wa mtumiaji" reads it after them too: see
# _users_words).
MODEL_USER_WORDS = frozenset(
    "user users usuario usuaria usuarios utilizador utilizadora utilisateur "
    "utilisatrice nutzer nutzerin benutzer benutzerin utente utenti gebruiker gebruikers "
    "uzytkownik uzytkownika uzytkowniczka uzytkowniczki mtumiaji watumiaji".split()
)
USER_WORD_REACH = 3
# A query about a word or a work ("rabbit hole meaning", "what is a half-brother?", "friends tv
# show cast", "sister act songs") uses relation words as words or titles: they are nobody's
# relations, however short the query, unless it speaks in the first person.
ABOUT_WORDS = re.compile(
    r"\b(?:meaning|meanings|define|definition|definitions|synonyms?|antonyms?|etymology|"
    r"spell|spelling|pronounce|pronunciation|translate|translation|plural|"
    r"significado|signification|bedeutung|significato|betekenis|definicion|definicao|"
    r"what\s+does\s+[\w' -]+\s+mean|what\s+(?:is|are)\s+(?:a|an)|"
    r"what\s+(?:a|an)\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are))\b"
)
ABOUT_WORKS = re.compile(
    r"\b(?:tv|sitcom|episodes?|cast|lyrics|soundtrack|trailer|imdb|netflix|movies?|films?|"
    r"novel|actors?|actress)\b"
)
# "Henry VIII", "Dom Pedro I", "Pope John Paul II", "King Charles": a historical or royal
# person, not the user's Henry or Pedro.
_REGNAL = re.compile(
    r"\b(?P<name>[A-Z][^\W\d_]+)\s+(?P<numeral>(?=[IVX])X{0,3}(?:IX|IV|V?I{0,3}))"
    r"(?:'s)?(?![\w'])(?P<rest>\s*[?!.,;:]|\s*$)?"
)
_TITLED = re.compile(
    r"\b(?:king|queen|emperor|empress|pope|saint|tsar|czar|sultan|pharaoh|prince|princess|"
    r"dom|rei|rainha|roi|reine|konig|könig|rey|reina|kaiser|imperador|imperatriz|"
    r"empereur|imperatrice)\s+(?P<name>[A-Z][^\W\d_]+)",
    re.IGNORECASE,
)
# Written without spaces between words: found inside the query, not as words.
USER_MARKS_CJK = ("私", "僕", "俺", "うち", "我")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_WORD = re.compile(r"[\w'-]+")


def _tokens(text: str) -> list[str]:
    """The query's words folded, possessives kept ("napoleon's")."""
    return _WORD.findall(fold(text).replace("’", "'"))


def _words(text: str) -> list[str]:
    return [word.removesuffix("'s") for word in _tokens(text)]


def first_person(query: str) -> bool:
    """Whether the query speaks in the first person (USER_WORDS but "user", French "j'",
    "m'", Japanese 私 …)."""
    return any(
        (word in USER_WORDS and word not in MODEL_USER_WORDS) or word.startswith(("j'", "m'"))
        for word in _words(query)
    ) or any(mark in query for mark in USER_MARKS_CJK)


def about_words_or_works(query: str) -> bool:
    """Whether the query asks about a word (its meaning, spelling, translation) or a work (a
    show's cast, a film; not of "the user"), not in the first person: its relation words are
    nobody's."""
    if first_person(query):
        return False
    folded = fold(query)
    # "The user asks what a family is": a definition whoever asks; "user wife movies": hers.
    of_user = any(word in MODEL_USER_WORDS for word in _words(query))
    return bool(ABOUT_WORDS.search(folded) or (not of_user and ABOUT_WORKS.search(folded)))


def historical_names(query: str) -> set[str]:
    """The folded names the query gives a regnal number or a royal title ("Henry VIII", "Dom
    Pedro I", "King Charles"): someone of history, not the user's Henry or Pedro. A bare "I"
    counts only before punctuation or the end ("Tell Sofia I love her" has none)."""
    names = set()
    for match in _REGNAL.finditer(query):
        if match["numeral"] != "I" or match["rest"] is not None:
            names.add(fold(match["name"]))
    for match in _TITLED.finditer(query):
        names.add(fold(match["name"]))
    return names


def _is_relation_word(word: str) -> bool:
    return any(form in RELATION_WORDS or form in GROUP_WORDS for form in _singulars(word))


def _possessed(tokens: list[str], i: int) -> bool:
    """Whether a possessive other than the user's comes just before tokens[i] ("napoleon's
    brother", "viii's first wife"; not "the user's wife", "my wife")."""
    for token in tokens[max(0, i - POSSESSOR_REACH) : i]:
        if token in NOT_POSSESSORS or not token.endswith(("'s", "s'")):
            continue
        owner = token.removesuffix("'s").removesuffix("'")
        if owner not in MODEL_USER_WORDS and owner not in USER_WORDS:
            return True
    return False


def _anyones(tokens: list[str], i: int, *, about_user: bool, words_or_works: bool) -> bool:
    """Whether tokens[i] is someone else's or anyone's: a word of possession follows ("the
    wife of Henry VIII"), another's possessive comes before (_possessed), or, in a question
    the classifier does not find about the user (`about_user`), an indefinite article does
    and "user" is not just before it ("how many legs does a dog have?", but "does the user
    have a dog?", "plan a family dinner", "gift ideas for a wife who gardens")."""
    after = tokens[i + 1] if i + 1 < len(tokens) else ""
    if after in OF_WORDS or _possessed(tokens, i) or words_or_works:
        return True
    if about_user:
        return False
    before = [token.removesuffix("'s") for token in tokens[max(0, i - USER_WORD_REACH) : i]]
    return (
        bool(before)
        and before[-1] in INDEFINITE_ARTICLES
        and not any(word in MODEL_USER_WORDS for word in before)
    )


def query_about_others(query: str, *, about_user: bool = False) -> str | None:
    """For a query about someone else's relations or about anyone's, and not the user's, the
    query without those relation words; else None. It is about others when it does not speak
    of the user (names_the_user), names at least one relation or group word, and every one
    of them is someone else's or anyone's (_anyones): "Who was the wife of Henry VIII?",
    "Who was Napoleon's brother?", "How many legs does a dog have?". What is left is what a
    memory must match by its words: the user's memories about wives, brothers or dogs are
    no answer to it, however close their meaning (recall.memory_recall)."""
    if names_the_user(query):
        return None
    tokens = _tokens(query)
    relation_at = [
        i for i, token in enumerate(tokens) if _is_relation_word(token.removesuffix("'s"))
    ]
    words_or_works = about_words_or_works(query)
    if not relation_at or not all(
        _anyones(tokens, i, about_user=about_user, words_or_works=words_or_works)
        for i in relation_at
    ):
        return None
    historical = historical_names(query)
    return " ".join(
        token
        for i, token in enumerate(tokens)
        if i not in relation_at and token.removesuffix("'s") not in historical
    )


def _singulars(word: str) -> tuple[str, ...]:
    """The word and the singulars it may be the plural of ("dogs", "wives", "nieces")."""
    if len(word) <= 3 or not word.endswith("s"):
        return (word,)
    forms = [word, word[:-1]]
    if word.endswith("es"):
        forms.append(word[:-2])
    if word.endswith("ies"):
        forms.append(word[:-3] + "y")
    if word.endswith("ves"):
        forms += [word[:-3] + "fe", word[:-3] + "f"]
    return tuple(forms)


def _cjk_hits(text: str, table: dict[str, frozenset[str]]) -> list[frozenset[str]]:
    return [relations for word, relations in table.items() if _CJK.match(word) and word in text]


def names_the_user(query: str) -> bool:
    """Whether the whole query speaks of the user: it is terse (TERSE_WORDS), or in the
    first person (USER_WORDS, French "j'", "m'"). "user" counts near a relation word only
    (_users_words): "The user asks what a family is in biology" is not about theirs."""
    words = _words(query)
    if len(words) <= TERSE_WORDS and not _CJK.search(query):
        return not about_words_or_works(query)
    return first_person(query)


def _users_words(tokens: list[str], *, whole_query: bool) -> list[str]:
    """The words of a query that may name the user's relations: with `whole_query` (the
    query is the user's), all; else those after a definite article, or at most
    USER_WORD_REACH words after "user" ("user spouse", "the user's wife", "does the user
    have any nieces"). Never a word followed by a word of possession ("the wife of Henry
    VIII", "la moglie di Enrico VIII"), nor one another's possessive comes just before
    ("Napoleon's brother", "my wife's brother")."""
    words = [token.removesuffix("'s") for token in tokens]
    counted = []
    for i, word in enumerate(words):
        after = words[i + 1] if i + 1 < len(words) else ""
        if after in OF_WORDS or _possessed(tokens, i):
            continue
        before = words[max(0, i - USER_WORD_REACH) : i]
        if whole_query or (before and before[-1] in DEFINITE_ARTICLES):
            counted.append(word)
        elif any(other in MODEL_USER_WORDS for other in before):
            counted.append(word)
    return counted


def matched_entities(
    query: str, entities: Sequence[tuple], *, about_user: bool = False
) -> dict[UUID, float]:
    """{entity id: evidence} of (id, kind, relation, names_folded) rows the query names: by a
    name or alias always; by a relation or group word when the relation is the user's: the
    query speaks of the user (names_the_user), the question classifier says it is about them
    (`about_user`), or the word follows a definite article or "user" (_users_words)."""
    tokens = _tokens(query)
    words = [token.removesuffix("'s") for token in tokens]
    if not words:
        return {}
    text = f" {' '.join(words)} "
    folded = fold(query)
    users = (about_user and not about_words_or_works(query)) or names_the_user(query)
    historical = historical_names(query)
    named: set[str] = set()
    groups: set[str] = set()
    for word in _users_words(tokens, whole_query=users):
        for form in _singulars(word):
            named |= RELATION_WORDS.get(form, {form})
            groups |= GROUP_WORDS.get(form, set())
    if users:
        for relations in _cjk_hits(folded, RELATION_WORDS):
            named |= relations
        for relations in _cjk_hits(folded, GROUP_WORDS):
            groups |= relations
    found: dict[UUID, float] = {}
    for entity_id, kind, relation, names in entities:
        relation = fold(relation)
        # "older sister", "best friend": the relation's last word names it too.
        relation_words = {relation, relation.rsplit(" ", 1)[-1]} if relation else set()
        if any(
            (f" {name} " in text and name not in historical)
            or (_CJK.search(name) and name in folded)
            for name in names
        ):
            found[entity_id] = 1.0
        elif relation_words & named:
            found[entity_id] = 1.0
        elif relation_words & groups or (kind == EntityKind.PET and groups & PETS):
            found[entity_id] = GROUP_EVIDENCE
    return found


def _entity_rows(user_ids: set[UUID]) -> list[tuple]:
    """(id, kind, relation, names_folded) of these users' entities. Run on every recall, most
    often to find none: the statement is written out, since building it with the ORM took
    ten times as long as running it (0.17 against 0.015 ms on SQLite)."""
    user_field = Entity._meta.get_field("user").target_field
    values = [user_field.get_db_prep_value(user_id, connection) for user_id in sorted(user_ids)]
    table = connection.ops.quote_name(Entity._meta.db_table)
    placeholders = ", ".join(["%s"] * len(values))
    with connection.cursor() as cursor:
        cursor.execute(
            # Only the table name is formatted in; the ids are parameters.
            f"SELECT id, kind, relation, names_folded FROM {table} "
            f"WHERE user_id IN ({placeholders})",
            values,
        )
        fetched = cursor.fetchall()
    # SQLite gives the id as hex text and the JSON as text; PostgreSQL, a UUID and a list.
    return [
        (
            entity_id if isinstance(entity_id, UUID) else UUID(entity_id),
            kind,
            relation,
            json.loads(names) if isinstance(names, str) else names,
        )
        for entity_id, kind, relation, names in fetched
    ]


def entity_evidence(
    *, query: str, scopes: Sequence[CarrierIds], about_user: bool = False
) -> dict[UUID, float]:
    """{memory id: entity evidence} of the memories linked to the entities the query names,
    among the entities of the scopes' users (the memories' scopes are checked later, with
    the other candidates'). A relation or group word counts only for the user's relation
    (matched_entities; `about_user`: the question classifier's word): "my wife", "user
    spouse", "dogs", "how are the dogs?" and "What should we do as a family?" name the
    user's; "Who was the wife of Henry VIII?" and "How many legs does a dog have?" do not."""
    users = {scope.user_id for scope in scopes if scope.user_id is not None}
    if not users:
        return {}
    rows = _entity_rows(users)
    if not rows:
        return {}
    matched = matched_entities(query, rows, about_user=about_user)
    if not matched:
        return {}
    links = Entity.memories.through.objects.filter(entity_id__in=matched).values_list(
        "memory_id", "entity_id"
    )
    evidence: dict[UUID, float] = {}
    for memory_id, entity_id in links:
        evidence[memory_id] = max(evidence.get(memory_id, 0.0), matched[entity_id])
    return evidence
