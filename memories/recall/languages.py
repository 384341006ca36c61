"""Which language a memory or a question is written in, among the languages whose background
calibration.py holds (data/background_by_language.txt): the same ordinary memories written
in each. A multilingual embedder puts a question nearer to every text of its own language,
whatever the text says (multilingual-e5-small: a Portuguese question is some two standard
deviations nearer to Portuguese memories than to English ones); calibration.py takes that
off a memory in another language than the question.

The guess is py3langid's (its model ships in the package), limited to those languages; a
guess under MIN_PROBABILITY (a word or two often is) is no language: such a text is
measured as before."""

import functools
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
BACKGROUND_BY_LANGUAGE_FILE = DATA / "background_by_language.txt"
# The probability of the guess among languages() below which a text has no language here. 0.4, as
# the explanation shows a query's language (explain.LANGUAGE_MIN_PROBABILITY).
MIN_PROBABILITY = 0.4
UNKNOWN = ""


def background_by_language() -> list[tuple[str, str]]:
    """(language, memory text) per line of the shipped file."""
    lines = BACKGROUND_BY_LANGUAGE_FILE.read_text(encoding="utf-8").splitlines()
    pairs = []
    for line in lines:
        if not line.strip() or line.startswith("#"):
            continue
        language, text = line.split("\t", 1)
        pairs.append((language, text))
    return pairs


@functools.cache
def languages() -> tuple[str, ...]:
    return tuple(sorted({language for language, _ in background_by_language()}))


@functools.cache
def _identifier():
    # Loading py3langid's model takes ~0.5 s, once per process; a guess takes ~30 µs.
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(list(languages()))
    return identifier


def language_of(text: str) -> str:
    """The language of `text` among languages(), or UNKNOWN when the guess is under
    MIN_PROBABILITY or the text has no letters."""
    if not any(character.isalpha() for character in text):
        return UNKNOWN
    language, probability = _identifier().classify(text)
    return language if float(probability) >= MIN_PROBABILITY else UNKNOWN
