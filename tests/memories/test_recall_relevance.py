"""What a model is handed, through the API with the real default embedder
(multilingual-e5-small): nothing for a question no memory helps with, the memory a vague
request is about, and memories found across languages. The labelled set behind the
settings is measured by `python -m bench vague` (docs/benchmarks.md, "Relevance")."""

import numpy as np
import pytest

from memories.recall import calibration
from memories.recall.calibration import Calibration, fit_classifier
from tests.memories.helpers import api_with_memories, search_keys

CREATE_URL = "/api/memories"
CONTEXT_URL = "/api/memories/context"

PROFILE = [
    {"key": "diet", "value": "Vegetarian, and allergic to hazelnuts"},
    {"key": "editor", "value": "Uses Neovim with a hand-written Lua config"},
    {"key": "car", "value": "Drives a grey Toyota Prius"},
    {"key": "daughter", "value": "Has a daughter, Mia, who is seven and loves dinosaurs"},
    {"key": "sport", "value": "Goes bouldering twice a week"},
    {"key": "job", "value": "Works as a structural engineer at a bridge design firm"},
    {"key": "trip", "value": "Flying to Japan for two weeks in April"},
    {"key": "music", "value": "Plays the cello in an amateur orchestra"},
]


@pytest.fixture
def profile_api(db):
    return api_with_memories("relevance", PROFILE)


@pytest.mark.parametrize(
    "question",
    [
        "What is the weather like on Mars?",
        "What is the capital of Australia?",
        "what is 17 times 23",
        "how do I reverse a linked list in C?",
        "asdf qwer zxcv",
        "good morning, how are you today?",
    ],
)
def test_a_question_no_memory_helps_with_gets_an_empty_hint_and_no_results(profile_api, question):
    response = profile_api.post(CONTEXT_URL, {"query": question}, format="json")

    assert response.status_code == 200
    assert response.json() == {"hint": "", "memories": [], "profile": None}
    assert search_keys(profile_api, question) == []


@pytest.mark.parametrize(
    ("question", "key"),
    [
        ("what should I cook tonight?", "diet"),
        ("help me pick a birthday present for my kid", "daughter"),
        ("what should I pack?", "trip"),
    ],
)
def test_a_vague_request_keeps_the_memory_it_is_about(profile_api, question, key):
    assert key in search_keys(profile_api, question)

    response = profile_api.post(CONTEXT_URL, {"query": question}, format="json")
    assert key in [memory["key"] for memory in response.json()["memories"]]


def test_a_deleted_memory_leaves_nothing_behind_for_its_question(profile_api):
    car = next(m for m in profile_api.get(CREATE_URL).json()["data"] if m["key"] == "car")
    assert "car" in search_keys(profile_api, "Prius")

    assert profile_api.delete(f"{CREATE_URL}/{car['id']}").status_code == 204

    assert search_keys(profile_api, "Prius") == []


def test_a_german_memory_is_found_by_an_english_question(db):
    api = api_with_memories(
        "german",
        [
            {"key": "wohnort", "value": "Ich wohne in München, im Stadtteil Schwabing"},
            {"key": "hobby", "value": "Goes bouldering twice a week"},
            {"key": "editor", "value": "Uses Neovim"},
            {"key": "diet", "value": "Vegetarian"},
        ],
    )

    assert search_keys(api, "Where does the user live?")[0] == "wohnort"
    assert search_keys(api, "Where do I live?")[0] == "wohnort"


def test_an_english_memory_is_found_by_a_spanish_question(db):
    api = api_with_memories(
        "spanish",
        [
            {"key": "home", "value": "Lives in Porto with her partner"},
            {"key": "job", "value": "Works as a nurse at the children's hospital"},
            {"key": "pet", "value": "Has a cat called Miso"},
        ],
    )

    assert search_keys(api, "¿Dónde vivo?")[0] == "home"
    assert search_keys(api, "¿Cómo se llama mi gato?")[0] == "pet"


# Questions in five languages that are not among the classifier's references: how it does
# on questions it was not fitted to. (A reference it was fitted to may sit on the boundary:
# the fit is penalised, and int8 numerics differ a little from one CPU to another.)
HELD_OUT_ABOUT_THE_USER = [
    "what should I cook tonight?",
    "What was the name of my first dog?",
    "¿A qué hora empiezo a trabajar?",
    "¿Qué libro le recomendé a mi hermano?",
    "Quel est mon plat préféré ?",
    "Welche Sprachen spreche ich?",
    "Qual é o nome do meu gato?",
]
HELD_OUT_ABOUT_THE_WORLD = [
    "who wrote the Odyssey?",
    "what is 9 times 8",
    "¿Cuál es el río más largo del mundo?",
    "Quelle est la capitale du Japon ?",
    "Wie funktioniert ein Kühlschrank?",
    "Qual é a distância da Terra à Lua?",
    "Explain recursion in Python.",
]


def test_the_question_classifier_tells_questions_about_the_user_from_others(db):
    references = set(calibration.texts(calibration.ABOUT_USER_FILE))
    references |= set(calibration.texts(calibration.ABOUT_ANYTHING_ELSE_FILE))
    assert not references & {*HELD_OUT_ABOUT_THE_USER, *HELD_OUT_ABOUT_THE_WORLD}

    about_user = [
        calibration.calibrate(vector).about_user
        for vector in _query_vectors(HELD_OUT_ABOUT_THE_USER)
    ]
    about_the_world = [
        calibration.calibrate(vector).about_user
        for vector in _query_vectors(HELD_OUT_ABOUT_THE_WORLD)
    ]

    assert min(about_user) > 0 > max(about_the_world), (about_user, about_the_world)


def test_calibrated_similarity_is_in_spreads_above_the_background_mean():
    assert Calibration(mean=0.8, spread=0.02, about_user=0.0).of(0.86) == pytest.approx(3.0)


def test_the_classifier_fit_separates_two_groups():
    rng = np.random.default_rng(7)
    positive = rng.normal(1.0, 0.5, size=(40, 3))
    negative = rng.normal(-1.0, 0.5, size=(40, 3))

    weights = fit_classifier(positive, negative, penalty=0.1)

    def logit(x):
        return x @ weights[:-1] + weights[-1]

    assert (logit(positive) > 0).mean() > 0.95
    assert (logit(negative) < 0).mean() > 0.95


def _query_vectors(texts: list[str]):
    from memories.embeddings.embedders import get_embedder

    return get_embedder().embed_queries(texts)
