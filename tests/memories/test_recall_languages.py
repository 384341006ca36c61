"""A memory in another language than the question is measured fairly: multilingual-e5-small
puts a question nearer to every text of its own language, and recall takes that pull off
(memories.recall.calibration, languages). Through the API with the real default embedder,
and the language every write path gives a memory."""

import json

import pytest
from django.test import override_settings

from memories.embeddings.embedders import embed_query
from memories.models import Memory, languages
from memories.recall.calibration import Calibration, calibrate
from memories.recall.languages import background_by_language
from tests.memories.helpers import api_with_memories, search_keys

# A Spanish speaker's memories, most in Spanish, two in English.
PROFILE = [
    {"key": "perro", "value": "Tiene un perro mestizo que se llama Rocky"},
    {"key": "casa", "value": "Vive en Valencia con su pareja"},
    {"key": "trabajo", "value": "Trabaja como enfermera en un hospital"},
    {"key": "comida", "value": "Le encanta la paella de su abuela"},
    {"key": "deporte", "value": "Juega al pádel los domingos"},
    {"key": "hermano", "value": "Su hermano vive en Sevilla"},
    {"key": "classes", "value": "Takes beginner Italian classes on Tuesday evenings"},
    {"key": "savings", "value": "Saving up for a new laptop"},
]


@pytest.fixture
def api(db):
    return api_with_memories("languages", PROFILE)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Corre 5 km à beira-rio três vezes por semana", "pt"),
        ("Plays chess online most evenings", "en"),
        ("Hat einen Hund namens Bello und geht jeden Morgen mit ihm spazieren", "de"),
        ("Tiene un perro mestizo que se llama Rocky", "es"),
        ("42", languages.UNKNOWN),
        ("!!", languages.UNKNOWN),
    ],
)
def test_the_language_of_a_text_among_the_background_languages(text, language):
    assert languages.language_of(text) == language


def test_the_background_holds_the_same_memories_in_every_language():
    by_language: dict[str, int] = {}
    for language, _ in background_by_language():
        by_language[language] = by_language.get(language, 0) + 1
    assert set(by_language) == set(languages.LANGUAGES)
    assert "en" in by_language and len(by_language) >= 8
    assert len(set(by_language.values())) == 1, by_language


def test_a_memory_in_another_language_is_measured_without_its_languages_pull():
    calibration = Calibration(
        mean=0.80, spread=0.02, about_user=0.0, language="es", pulls={"en": -0.02}
    )
    assert calibration.of(0.78, "en") == pytest.approx(0.0)
    # The question's own language and an unknown one are measured as before.
    assert calibration.of(0.78, "es") == pytest.approx(-1.0)
    assert calibration.of(0.78, languages.UNKNOWN) == pytest.approx(-1.0)


def test_the_pulls_are_the_questions_mean_similarity_to_each_language_less_its_own(db):
    vector = embed_query("¿Qué idioma estoy estudiando?")
    calibration = calibrate(vector, language="es", language_offset=0.5)
    assert calibration.pulls is not None
    assert "es" not in calibration.pulls
    assert set(calibration.pulls) == set(languages.LANGUAGES) - {"es"}
    # A Spanish question is nearer to Spanish texts than to English ones, whatever they say.
    assert calibration.pulls["en"] < 0
    assert calibrate(vector, language="es", language_offset=0.0).pulls is None
    assert calibrate(vector, language=languages.UNKNOWN, language_offset=0.5).pulls is None


def test_a_question_finds_the_memory_in_another_language_that_answers_it(api):
    assert "classes" in search_keys(api, "¿Qué idioma estoy estudiando?")[:3]


@override_settings(RECALL_LANGUAGE_OFFSET=0.0)
def test_without_the_offset_the_questions_own_language_wins(api):
    # The case above, measured as before this change: the English memory that answers the
    # Spanish question ranks below Spanish memories that do not.
    assert "classes" not in search_keys(api, "¿Qué idioma estoy estudiando?")[:3]


def test_every_write_gives_a_memory_its_language(api):
    assert dict(Memory.objects.values_list("key", "language")) == {
        "perro": "es",
        "casa": "es",
        "trabajo": "es",
        "comida": "es",
        "deporte": "es",
        "hermano": "es",
        "classes": "en",
        "savings": "en",
    }
    memory = Memory.objects.get(key="savings")
    response = api.patch(
        f"/api/memories/{memory.id}", {"value": "Ahorra para un portátil nuevo"}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert Memory.objects.get(id=response.json()["id"]).language == "es"

    response = api.post(
        "/api/memories/batch",
        {"memories": [{"key": "film", "value": "Regarde des films d'animation japonais le soir"}]},
        format="json",
    )
    assert response.status_code in (200, 201), response.content[:300]
    assert Memory.objects.get(key="film").language == "fr"


def test_an_import_gives_a_memory_its_language(api):
    line = {"key": "garten", "value": "Pflanzt jedes Frühjahr Tomaten und Kräuter im Garten"}
    body = json.dumps(line) + "\n"
    response = api.post("/api/memories/import", body, content_type="application/x-ndjson")
    assert response.status_code in (200, 201, 202), response.content[:300]
    assert Memory.objects.get(key="garten").language == "de"


def test_a_querys_function_words_in_other_languages_are_not_looked_up():
    from memories.recall.words import index_terms, query_terms

    assert query_terms("¿me cuentas un chiste?") == ["cuenta", "chist"]
    assert query_terms("Wo ist der Hund von meinem Bruder?") == ["wo", "hund", "meinem", "bruder"]
    # A memory's words are indexed as before; a query never asks for those.
    assert "un" in index_terms("Tiene un perro mestizo")


def test_small_talk_in_spanish_finds_no_memory_by_its_articles(api):
    assert search_keys(api, "¿me cuentas un chiste?") == []


def test_the_migration_guesses_the_language_of_the_memories_saved_before(api):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("memories.migrations.0027_memory_language")
    Memory.objects.update(language=None)  # as the column reads after it is added

    migration.guess_languages(apps, None)

    assert Memory.objects.get(key="perro").language == "es"
    assert Memory.objects.get(key="classes").language == "en"
    assert not Memory.objects.filter(language__isnull=True).exclude(value="").exists()


def test_a_serving_process_loads_the_language_guesser_before_its_first_request(settings):
    from config.serving import prepare_serving_process

    settings.EMBEDDER = "none"  # the guesser is loaded whatever the embedder
    languages._identifier.cache_clear()

    prepare_serving_process()

    assert languages._identifier.cache_info().currsize == 1
