"""The same ordinary memories written in each of a few languages
(data/background_by_language.txt), against which calibration.py measures how much nearer a
question comes to every text of its own language, whatever the text says (multilingual-e5-
small: a Portuguese question is some two standard deviations nearer to Portuguese memories
than to English ones), and takes that off a memory in another language than the question.
The file holds the languages memories.models.languages guesses."""

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
BACKGROUND_BY_LANGUAGE_FILE = DATA / "background_by_language.txt"


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
