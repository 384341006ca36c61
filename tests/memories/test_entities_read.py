"""A save that names no entities (a product's plain POST /api/memories, a model's
memory_save) is linked to the people and pets its own words name as the user's, and to the
user's known entities it names; `entities: []` links nothing. A family request then finds
the family's memories without the product naming anyone."""

import pytest

from memories.entities.reading import mentions_in_value
from memories.models import Entity, Memory

CONTEXT = "/api/memories/context"


def save(api, key, value, **fields):
    response = api.post("/api/memories", {"key": key, "value": value, **fields}, format="json")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def read(value):
    return [(m.name, m.kind, m.relation) for m in mentions_in_value(value)]


@pytest.mark.parametrize(
    "value, mentions",
    [
        ("Wife Priya handles the bakery's accounts", [("Priya", "person", "wife")]),
        ("Little sister Wanjiru is in high school", [("Wanjiru", "person", "sister")]),
        ("Mother runs a tailoring shop in Nakuru", [("my mother", "person", "mother")]),
        ("Has a younger brother, Oisín, who is 9", [("Oisín", "person", "brother")]),
        ("Has two cats, Pixel and Byte", [("Pixel", "pet", "cat"), ("Byte", "pet", "cat")]),
        ("Has a rescue greyhound called Flecha", [("Flecha", "pet", "dog")]),
        ("Her mother Anjali has type 2 diabetes", [("Anjali", "person", "mother")]),
        ("Lives with partner Sam, who is a nurse", [("Sam", "person", "partner")]),
        ("Widowed; husband Seamus died in 2019", [("Seamus", "person", "husband")]),
        ("Married to Rui, a chemistry teacher", [("Rui", "person", "spouse")]),
        ("His boss Linda wants the report by Monday", [("Linda", "person", "boss")]),
        (
            "Three children: Ade (12), Funmi (9) and baby Tobi",
            [("Ade", "person", "child"), ("Funmi", "person", "child"), ("Tobi", "person", "child")],
        ),
        (
            "Five grandchildren; the oldest starts college",
            [("my grandchildren", "person", "grandchild")],
        ),
        (
            "Lives with his parents and grandmother",
            [("my grandmother", "person", "grandmother")],
        ),
    ],
)
def test_the_people_and_pets_at_the_head_of_a_clause_are_read(value, mentions):
    assert read(value) == mentions


@pytest.mark.parametrize(
    "value",
    [
        "Allergic to cats",  # a relation word, but nobody
        "Product manager at a SaaS company",  # a job
        "Manager at Acme",  # a job: work relations need a name
        "Cat person",  # a pet at the head needs a name, a count or a possessive
        "Dog-friendly flat in Leith",
        "Coaches the twins' junior cricket team",
        "Noor's rabbit Pluis lives in a hutch",  # someone else's
        "Works with children at the library",
        "Has a Tesla Model 3",
        "Loves the sitcom Brothers and Sisters",
    ],
)
def test_a_relation_word_that_is_not_the_users_person_is_left_alone(value):
    assert read(value) == []


def test_a_possessive_after_someone_named_is_theirs():
    assert read("Brother Daan and his wife live in Rotterdam") == [("Daan", "person", "brother")]


def test_a_plain_save_links_the_people_its_words_name_and_known_names(api, owner):
    first = save(api, "wife", "Wife Priya runs a flower stall")
    later = save(api, "wife's food", "Priya doesn't eat beef")
    other = save(api, "tools", "Uses priya-cli for deployments")  # not the name as written

    [priya] = Entity.objects.filter(user=owner)
    assert (priya.name, priya.kind, priya.relation) == ("Priya", "person", "wife")
    assert {str(m.id) for m in priya.memories.all()} == {first["id"], later["id"]}
    assert not Memory.objects.get(id=other["id"]).entities.exists()


def test_a_save_that_names_no_entities_explicitly_links_none(api, owner):
    save(api, "wife", "Wife Priya runs a flower stall", entities=[])

    assert not Entity.objects.filter(user=owner).exists()


def test_a_repeated_plain_save_links_once(api, owner):
    save(api, "dog", "Has a beagle named Biscuit")
    response = api.post(
        "/api/memories", {"key": "dog", "value": "Has a beagle named Biscuit"}, format="json"
    )

    assert response.status_code == 200, response.content[:500]
    [biscuit] = Entity.objects.filter(user=owner)
    assert biscuit.memories.count() == 1


def test_a_family_request_finds_the_family_saved_as_plain_text(api):
    for key, value in [
        ("son", "Son Leo is 7 and loves dinosaurs"),
        ("daughter", "Daughter Ava started kindergarten this fall"),
        ("husband", "Husband Marcus works night shifts as a paramedic"),
        ("dog", "Has a beagle named Biscuit"),
        ("job", "Works as an ICU nurse at Toronto General"),
        ("commute", "Takes the subway to work"),
        ("stack", "Prefers spreadsheets to apps for budgeting"),
        ("coffee", "Drinks oat-milk lattes"),
    ]:
        save(api, key, value)

    response = api.post(
        CONTEXT, {"query": "plan a family day out for us, kids and dog included"}, format="json"
    )

    assert response.status_code == 200, response.content[:500]
    hint = [memory["key"] for memory in response.json()["memories"]]
    assert {"son", "daughter", "husband", "dog"} <= set(hint[:5]), hint
    assert "stack" not in hint and "coffee" not in hint
