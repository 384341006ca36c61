"""The words keyword search indexes and looks up: lower-cased, accents folded, split on
anything that is not a letter or digit, stop words dropped, Snowball (Porter 2) stemmed. The
same function serves memories and queries on both databases, so a word matches the same
way everywhere."""

import re
import threading
import unicodedata
from collections import Counter

import Stemmer

MAX_QUERY_TERMS = 32
MAX_TERM_LENGTH = 64
# Words too common to say anything about a memory, and what contractions leave ("who's",
# "don't", "I'll").
STOP_WORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her "
    "hers him his how i if in into is it its me my of on or our she so than that the their "
    "them then there these they this to too was we were what when where which who whom why "
    "will with would you your yours s t d ll re ve m".split()
)
# The same kind of words in the other languages the default embedder serves (accents folded),
# dropped from queries only: "¿me cuentas un chiste?" must not find every Spanish memory
# that says "un". Words that are also English content words ("son", "pain", "gift") are
# left out. The index keeps them (dropping them there would need every memory indexed
# again), and a query never asks for them.
QUERY_STOP_WORDS = STOP_WORDS | frozenset(
    # Spanish
    "el la los las un una unos unas de del al y o que en con por para se su sus lo le les "
    "mi mis tu tus es"
    # French
    " une des du et ou qui au aux ce cet cette est sont mon ma mes ton ta tes sa ses leur "
    "leurs je il elle nous vous ils elles"
    # Italian
    " il gli uno dei degli delle della di da e che mio mia miei mie"
    # Portuguese
    " os um uma uns umas do da dos das em no na nos nas com meu minha meus minhas seu sua"
    # German
    " der die das den dem des ein eine einen einem einer und oder ist sind zu im am mit von "
    "fur auf mein meine meinen ich du er sie es wir"
    # Dutch
    " het een en van op voor zijn mijn"
    # Polish
    " w z na ze sie jest moj moja moje".split()
)
# Words a query uses to name the person the memories are about ("user pets", "where does the
# user live?"): a memory is about that person whether or not it says so, so in a query they
# carry no weight (a memory that says "user" still matches a query of that word alone).
PERSON_WORDS = frozenset({"user", "users"})
_WORD = re.compile(r"[^\W_]+")
# PyStemmer's stemmers keep state between calls: one per thread.
_local = threading.local()


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _words(text: str, stop_words: frozenset[str] = STOP_WORDS) -> list[str]:
    words = [
        w for w in _WORD.findall(_fold(text)) if w not in stop_words and len(w) <= MAX_TERM_LENGTH
    ]
    return [term[:MAX_TERM_LENGTH] for term in _stemmer().stemWords(words)]


def index_terms(text: str) -> Counter[str]:
    """A memory's terms and how often each occurs."""
    return Counter(_words(text))


def query_terms(text: str) -> list[str]:
    """A query's distinct terms, in order, at most MAX_QUERY_TERMS; the words that name the
    user (PERSON_WORDS) only when the query has nothing else."""
    terms = list(dict.fromkeys(_words(text, QUERY_STOP_WORDS)))
    content = [term for term in terms if term not in PERSON_WORDS]
    return (content or terms)[:MAX_QUERY_TERMS]
