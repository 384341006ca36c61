"""Which language a text is written in, among the languages whose background recall holds
(memories/recall/data/background_by_language.txt, memories/recall/languages.py): a memory's,
guessed whenever it is saved (Memory.language), and a question's. py3langid's guess (its
model ships in the package), limited to LANGUAGES; a guess under MIN_PROBABILITY (a word or
two often is) is no language: such a text is measured as before. Here, with the records,
because a memory's save guesses it."""

import functools

LANGUAGES = ("de", "en", "es", "fr", "it", "nl", "pl", "pt")
# The probability of the guess among LANGUAGES below which a text has no language here. 0.4,
# as the explanation shows a query's language (explain.LANGUAGE_MIN_PROBABILITY).
MIN_PROBABILITY = 0.4
UNKNOWN = ""


@functools.cache
def _identifier():
    # Loading py3langid's model takes ~0.5 s, once per process; a guess takes 0.03-0.2 ms.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(LANGUAGES))
    return identifier


def language_of(text: str) -> str:
    """The language of `text` among LANGUAGES, or UNKNOWN when the guess is under
    MIN_PROBABILITY or the text has no letters."""
    if not any(character.isalpha() for character in text):
        return UNKNOWN
    language, probability = _identifier().classify(text)
    return language if float(probability) >= MIN_PROBABILITY else UNKNOWN
