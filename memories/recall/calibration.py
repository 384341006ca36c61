"""What a question's similarities mean, the same way for every question and every model.

Two things are measured once per question, against texts shipped with the code (never
another user's data), each embedded by the configured embedder:

- **The background** (data/background_memories.txt): ordinary memories of nobody in
  particular. Cosine similarities of one model are not comparable across questions: with
  multilingual-e5-small every memory is 0.75-0.85 similar to any question, gibberish
  included. A memory's calibrated similarity is how many standard deviations its
  similarity lies above the question's mean similarity to the background:

      calibrated = (similarity − mean(background · q)) / std(background · q)

- **Whether the question is about the user** (data/questions_about_the_user.txt against
  data/questions_about_anything_else.txt): a logistic regression on the question's vector,
  fit on those two lists when the process first needs it. Its log-odds (`about_user`, 0
  undecided) separates "what should I cook tonight?", which a diet memory serves, from
  "what is 9 times 8?" or "who wrote the Odyssey?", which no memory serves however close
  one is (a car called Odyssey).

- **The pull of a language** (data/background_by_language.txt, languages.py): the same
  ordinary memories in each of a few languages. A multilingual model puts a question nearer
  to every text of its own language whatever it says (multilingual-e5-small: a Spanish or
  German question comes 1-2 standard deviations nearer to the Spanish or German texts than
  to the same texts in English). A memory in another language than the question (both
  known) that the question's language pulls away from is lifted by `language_offset`
  (0..1) of that pull:

      calibrated = (similarity − mean − offset · min(0, mean_L(memory) − mean_L(question)))
                   / std

  where mean_L is the question's mean similarity to the background of language L. Never
  lowered: English questions come a little nearer to the other languages' texts than to
  English ones, and taking that off measured worse on the tuning part (an English question
  then missed a German memory that answers it). A memory in the question's language, or in
  no language known here, is measured as before.

scoring.is_relevant reads all three. The vectors and the fitted weights are kept beside the model
files (EMBEDDING_CACHE_DIR) so later processes read them, and are renewed when a text file
or the model changes."""

import functools
import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from django.conf import settings

from memories.embeddings.embedders import embed_query, get_embedder
from memories.models.languages import UNKNOWN
from memories.recall.languages import background_by_language

logger = logging.getLogger(__name__)

DATA = Path(__file__).resolve().parent / "data"
BACKGROUND_FILE = DATA / "background_memories.txt"
ABOUT_USER_FILE = DATA / "questions_about_the_user.txt"
ABOUT_ANYTHING_ELSE_FILE = DATA / "questions_about_anything_else.txt"
# A background whose similarities to a question hardly vary would make every small
# difference look large.
MIN_SPREAD = 0.01
# L2 penalty of the question classifier: chosen on the tuning part of the relevance set
# (docs/benchmarks.md); smaller fits the two lists closer and generalises worse.
CLASSIFIER_PENALTY = 0.1
NEWTON_STEPS = 30


@dataclass(frozen=True)
class Calibration:
    mean: float
    spread: float
    about_user: float
    # The question's language (languages.py, UNKNOWN when unsure) and the pull to take off a
    # memory in each other language: language_offset · min(0, mean_L − the question's mean_L).
    language: str = UNKNOWN
    pulls: dict[str, float] | None = None

    def of(self, similarity: float, language: str | None = UNKNOWN) -> float:
        """The calibrated similarity of a memory written in `language`."""
        if self.pulls and language in self.pulls:
            similarity -= self.pulls[language]
        return (similarity - self.mean) / self.spread


@dataclass(frozen=True)
class Reference:
    """What one embedder makes of the shipped texts."""

    background: np.ndarray  # [n, dimensions], unit rows
    classifier: np.ndarray  # [dimensions + 1]: weights, then the intercept
    by_language: np.ndarray  # [m, dimensions]: background_by_language.txt's memories
    languages: np.ndarray  # [m]: the language of each, grouped (sorted) by language

    @functools.cached_property
    def language_groups(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The languages, where each one's rows start, and how many it has."""
        names, starts, counts = np.unique(self.languages, return_index=True, return_counts=True)
        return [str(name) for name in names], starts, counts


def texts(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def fit_classifier(positive: np.ndarray, negative: np.ndarray, penalty: float) -> np.ndarray:
    """L2-penalised logistic regression (Newton's method) separating positive from negative
    vectors; returns the weights followed by the intercept (which is not penalised)."""
    x = np.vstack([positive, negative]).astype(np.float64)
    x = np.hstack([x, np.ones((len(x), 1))])
    y = np.concatenate([np.ones(len(positive)), np.zeros(len(negative))])
    ridge = penalty * np.eye(x.shape[1])
    ridge[-1, -1] = 0.0
    weights = np.zeros(x.shape[1])
    for _ in range(NEWTON_STEPS):
        p = 1.0 / (1.0 + np.exp(-(x @ weights)))
        gradient = x.T @ (p - y) + ridge @ weights
        hessian = (x * (p * (1 - p))[:, None]).T @ x + ridge
        weights -= np.linalg.solve(hessian, gradient)
    return weights.astype(np.float32)


_references: dict[str, Reference] = {}
_lock = threading.Lock()


def reference(embedder) -> Reference:
    found = _references.get(embedder.model_name)
    if found is not None:
        return found
    with _lock:
        found = _references.get(embedder.model_name)
        if found is None:
            found = _references[embedder.model_name] = _load_or_build(embedder)
    return found


def _load_or_build(embedder) -> Reference:
    background = texts(BACKGROUND_FILE)
    about_user = texts(ABOUT_USER_FILE)
    anything_else = texts(ABOUT_ANYTHING_ELSE_FILE)
    # Grouped by language, so each language's mean is one reduceat (calibrate).
    by_language = sorted(background_by_language(), key=lambda pair: pair[0])
    digest = hashlib.sha256(
        "\n\0".join(
            [embedder.model_name, str(CLASSIFIER_PENALTY), *background, *about_user,
             *anything_else, *(f"{language}\t{text}" for language, text in by_language)]
        ).encode()
    ).hexdigest()[:16]
    safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in embedder.model_name)
    path = Path(settings.EMBEDDING_CACHE_DIR) / f"relevance-{safe_name}-{digest}.npz"
    try:
        with np.load(path) as stored:
            built = Reference(
                background=stored["background"],
                classifier=stored["classifier"],
                by_language=stored["by_language"],
                languages=stored["languages"],
            )
        if built.background.shape == (len(background), embedder.dimensions):
            return built
    except (OSError, ValueError, KeyError):
        pass
    logger.info(
        "embedding the relevance references (%d texts) with %s",
        len(background) + len(about_user) + len(anything_else) + len(by_language),
        embedder.model_name,
    )
    built = Reference(
        background=np.asarray(embedder.embed(background), dtype=np.float32),
        classifier=fit_classifier(
            np.asarray(embedder.embed_queries(about_user)),
            np.asarray(embedder.embed_queries(anything_else)),
            CLASSIFIER_PENALTY,
        ),
        by_language=np.asarray(
            embedder.embed([text for _, text in by_language]), dtype=np.float32
        ),
        languages=np.asarray([language for language, _ in by_language]),
    )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.stem}-{threading.get_ident()}.npz")
        np.savez(
            temporary,
            background=built.background,
            classifier=built.classifier,
            by_language=built.by_language,
            languages=built.languages,
        )
        temporary.replace(path)
    except OSError as exc:  # a read-only directory costs the next process the same seconds
        logger.warning("could not keep the relevance references at %s: %s", path, exc)
    return built


def calibrate(
    query_vector: Sequence[float] | None,
    *,
    language: str = UNKNOWN,
    language_offset: float = 0.0,
) -> Calibration | None:
    """The question measured against the configured embedder's references; None without a
    vector (no embedder: recall goes by keywords). With the question's `language` (one of
    background_by_language.txt's) and a language_offset, the pull of every other language
    too."""
    if query_vector is None:
        return None
    embedder = get_embedder()
    if embedder is None:
        return None
    found = reference(embedder)
    query = np.asarray(query_vector, dtype=np.float32)
    similarities = found.background @ query
    pulls = None
    names, starts, counts = found.language_groups
    if language != UNKNOWN and language_offset > 0 and language in names:
        sums = np.add.reduceat(found.by_language @ query, starts)
        means = dict(zip(names, (sums / counts).tolist(), strict=True))
        pulls = {
            other: language_offset * min(0.0, mean - means[language])
            for other, mean in means.items()
            if other != language
        }
    return Calibration(
        mean=float(similarities.mean()),
        spread=max(float(similarities.std()), MIN_SPREAD),
        about_user=float(found.classifier[:-1] @ query + found.classifier[-1]),
        language=language,
        pulls=pulls,
    )


def embedder_warm_up() -> None:
    """Load the configured embedder, embed one text and measure it against the relevance
    references (embedded on a first start), so that a web worker answers its first request
    as fast as the rest (config/gunicorn.conf.py). A remote embedder is not called. Raises
    what loading the model raises."""
    if settings.EMBEDDER == "local":
        calibrate(embed_query("warm up"))
