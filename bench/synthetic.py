"""Synthetic memories for the latency runs: LOCOMO-like turns (`[date] speaker: sentence`)
built from a fixed vocabulary with Zipf-distributed word choice, and vectors that need no
model call per memory: each memory's vector is the normalised mean of the embedder's vectors
of its content words plus noise. So the vectors have the cluster structure of real text
(memories sharing words are close) and a real query embedding lands among them, at the cost
of embedding only the vocabulary (a few hundred words) instead of 100,000 texts. How much
noise is calibrated per embedder against real turns (bench/synthetic_noise.py)."""

import numpy as np

from bench import common

NAMES = (
    "Caroline Melanie Jon Gina John Maria Joanna Nate Tim Audrey Andrew Deborah Evan Sam "
    "Calvin Dave Jolene James Priya Omar Lena Hugo Aisha Marco"
).split()
RELATIONS = "mother father sister brother friend neighbour boss cousin partner son daughter".split()
VERBS = [
    tuple(pair.split("/"))
    for pair in (
        "visit/visited paint/painted cook/cooked buy/bought read/read watch/watched "
        "build/built fix/fixed plan/planned join/joined start/started finish/finished "
        "learn/learned teach/taught write/wrote sell/sold find/found lose/lost bake/baked "
        "play/played sing/sang draw/drew adopt/adopted book/booked try/tried share/shared "
        "organise/organised celebrate/celebrated practise/practised explore/explored "
        "photograph/photographed repair/repaired decorate/decorated attend/attended "
        "order/ordered plant/planted clean/cleaned borrow/borrowed return/returned "
        "recommend/recommended discover/discovered design/designed record/recorded "
        "climb/climbed hike/hiked swim/swam run/ran ride/rode collect/collected"
    ).split()
]
NOUNS = (
    "book painting recipe garden bike car guitar piano concert festival museum trip "
    "camera laptop phone dog cat puppy kitten horse bird fish plant flower tree cake pie "
    "bread coffee tea wine beer pizza pasta salad soup sandwich burger taco sushi novel "
    "poem song album movie series podcast game puzzle project report presentation "
    "interview job career course class workshop seminar conference meeting party wedding "
    "birthday anniversary holiday vacation beach mountain lake river forest park city "
    "village house apartment kitchen bedroom office studio gym pool library school "
    "university hospital clinic shelter charity fundraiser marathon race match team "
    "club band choir orchestra theatre play exhibition gallery sculpture pottery vase "
    "quilt scarf sweater jacket shoes dress hat necklace ring watch bag backpack tent "
    "kayak boat surfboard skateboard scooter drone telescope microscope robot app website "
    "blog newsletter magazine journal diary notebook letter postcard gift present toy "
    "doll lego board candle lamp sofa table chair shelf rug mirror window door fence "
    "roof porch garage basement attic yard barn farm vineyard orchard market bakery cafe "
    "restaurant bar hotel airport station bus train flight ticket passport map compass "
    "volunteer mentor coach therapist doctor nurse teacher student artist musician chef "
    "pilot engineer lawyer writer photographer designer scientist counselor speech award "
    "medal trophy certificate scholarship grant loan budget savings investment stock rent"
).split()
ADJECTIVES = (
    "new old big small beautiful amazing great lovely quiet noisy busy calm bright dark "
    "colourful simple fancy cozy huge tiny friendly funny sad happy exciting boring "
    "relaxing stressful healthy delicious spicy sweet fresh vintage modern local famous "
    "secret special favourite handmade expensive cheap rare wild gentle brave"
).split()
PLACES = (
    "beach park museum library cafe market gym studio lake mountain station airport mall "
    "festival gallery church shelter school office hospital farm zoo aquarium stadium pier"
).split()
TIMES = (
    "yesterday",
    "today",
    "last week",
    "last weekend",
    "last month",
    "last year",
    "this morning",
    "two days ago",
    "recently",
    "on Sunday",
    "on Friday",
    "in the summer",
    "in the winter",
)
MONTHS = (
    "January February March April May June July August September October November December"
).split()

MEMORY_TEMPLATES = (
    "I {v_past} a {adj} {noun} at the {place} {time}.",
    "{other} and I {v_past} the {noun} {time}; it was {adj}!",
    "My {rel} {v_past} a {adj} {noun} near the {place}.",
    "We talked about the {noun} and the {noun2} for hours.",
    "I'm planning to {v} the {adj} {noun} next month with my {rel}.",
    "Have you ever {v_past} a {noun}? I {v_past} one {time} and loved it.",
    "That {noun} sounds {adj}! I should {v} one too.",
    "Thanks, {other}! The {noun} was {adj} and the {noun2} too.",
    "I started a {noun} {time} because my {rel} wanted to {v} a {noun2}.",
    "Took my {rel} to the {place} to {v} the {adj} {noun}.",
)
QUERY_TEMPLATES = (
    "When did {name} {v} the {noun}?",
    "What {noun} did {name} {v} at the {place}?",
    "Where did {name} {v} a {adj} {noun}?",
    "Who did {name} {v} the {noun} with?",
    "What does {name}'s {rel} think about the {noun}?",
    "Why did {name} want to {v} a {noun}?",
    "What did {name} {v} in {month} {year}?",
    "How did {name} feel about the {adj} {noun}?",
)


def _zipf(rng: np.random.Generator, n: int, size: int, s: float = 1.0) -> np.ndarray:
    weights = 1.0 / np.arange(1, n + 1) ** s
    return rng.choice(n, size=size, p=weights / weights.sum())


def vocabulary() -> list[str]:
    words = set(NAMES) | set(RELATIONS) | set(NOUNS) | set(ADJECTIVES) | set(PLACES)
    words |= {v for pair in VERBS for v in pair}
    return sorted(words)


class Corpus:
    """Deterministic synthetic memories and queries, with their vectors."""

    def __init__(self, word_vectors: dict[str, np.ndarray], *, noise: float, seed: int = 7) -> None:
        self.rng = np.random.default_rng(seed)
        self.word_vectors = word_vectors
        self.noise = noise

    def _fill(self, template: str, speaker: str) -> tuple[str, list[str]]:
        rng = self.rng
        verb = VERBS[_zipf(rng, len(VERBS), 1)[0]]
        noun, noun2 = (NOUNS[i] for i in _zipf(rng, len(NOUNS), 2))
        fields = {
            "v": verb[0],
            "v_past": verb[1],
            "noun": noun,
            "noun2": noun2,
            "adj": ADJECTIVES[_zipf(rng, len(ADJECTIVES), 1)[0]],
            "place": PLACES[rng.integers(len(PLACES))],
            "rel": RELATIONS[rng.integers(len(RELATIONS))],
            "other": NAMES[rng.integers(len(NAMES))],
            "time": TIMES[rng.integers(len(TIMES))],
        }
        text = template.format(**fields)
        keys = ("v", "v_past", "noun", "noun2", "adj", "place", "rel", "other")
        words = [speaker] + [fields[k] for k in keys if "{" + k + "}" in template]
        return text, words

    def _vector(self, words: list[str], noise: float) -> np.ndarray:
        vector = np.mean([self.word_vectors[w] for w in words if w in self.word_vectors], axis=0)
        vector = vector / np.linalg.norm(vector)
        vector = vector + self.rng.normal(0.0, noise / np.sqrt(vector.size), vector.size)
        return (vector / np.linalg.norm(vector)).astype(np.float32)

    def memories(self, n: int, *, start: int = 0) -> tuple[list[tuple[str, str]], np.ndarray]:
        """n (key, value) pairs and their (n, d) vectors; keys are `syn-<index>`."""
        items, vectors = [], []
        rng = self.rng
        for i in range(start, start + n):
            speaker = NAMES[_zipf(rng, len(NAMES), 1, s=0.7)[0]]
            date = (
                f"{rng.integers(1, 13)}:{rng.integers(0, 60):02d} {rng.choice(['am', 'pm'])} "
                f"on {rng.integers(1, 29)} {MONTHS[rng.integers(12)]}, {rng.integers(2021, 2025)}"
            )
            template = MEMORY_TEMPLATES[rng.integers(len(MEMORY_TEMPLATES))]
            sentence, words = self._fill(template, speaker)
            items.append((f"syn-{i}", f"[{date}] {speaker}: {sentence}"))
            vectors.append(self._vector(words, noise=self.noise))
        return items, np.stack(vectors)

    def queries(self, n: int) -> list[str]:
        rng, out = self.rng, []
        for _ in range(n):
            verb = VERBS[_zipf(rng, len(VERBS), 1)[0]]
            fields = {
                "name": NAMES[_zipf(rng, len(NAMES), 1, s=0.7)[0]],
                "v": verb[0],
                "noun": NOUNS[_zipf(rng, len(NOUNS), 1)[0]],
                "adj": ADJECTIVES[_zipf(rng, len(ADJECTIVES), 1)[0]],
                "place": PLACES[rng.integers(len(PLACES))],
                "rel": RELATIONS[rng.integers(len(RELATIONS))],
                "month": MONTHS[rng.integers(12)],
                "year": int(rng.integers(2021, 2025)),
            }
            out.append(QUERY_TEMPLATES[rng.integers(len(QUERY_TEMPLATES))].format(**fields))
        return out


def noise_for(model_name: str) -> float:
    """The calibrated noise of this embedder (its model_name, e.g. multilingual-e5-small-int8).
    Raises SystemExit naming the command when it has none: an uncalibrated set would time
    a graph index on data unlike any real text."""
    entry = common.read_synthetic_noises().get(model_name)
    if entry is None:
        raise SystemExit(
            f"No synthetic noise for the embedder {model_name} in {common.SYNTHETIC_NOISE_FILE}; "
            "run `python -m bench calibrate --data ../shared/data/locomo-dev.json` with it."
        )
    return float(entry["noise"])


def embedded_vocabulary(embedder) -> dict[str, np.ndarray]:
    """Each word of the vocabulary with its vector as `embedder` embeds it."""
    words = vocabulary()
    vectors = np.asarray(embedder.embed(words), dtype=np.float32)
    return dict(zip(words, vectors, strict=True))


def embedded_corpus(embedder) -> Corpus:
    """The corpus over the vocabulary as `embedder` embeds it, with the embedder's calibrated
    noise (the set-up processes' start)."""
    return Corpus(embedded_vocabulary(embedder), noise=noise_for(embedder.model_name))
