"""Entities (issue 45, item 2, first part): a manual save names the people, pets, places and
organisations a memory is about; they link to one entity per thing (by folded name or alias,
or by a relation the user has one entity of); /api/entities lists, reads, edits and merges
the caller's own; the rule extractor recognises the plain forms."""

import json

import pytest

from extraction.rules import entity_mentions, extract_by_rules
from memories.models import Entity, Memory
from tests.memories.helpers import assert_error

URL = "/api/entities"


def save(api, key, value, entities, **fields):
    body = {"key": key, "value": value, "entities": entities, **fields}
    response = api.post("/api/memories", body, format="json")
    assert response.status_code in (200, 201), response.content[:500]
    return response.json()


def wife(name="Sofia"):
    return {"name": name, "kind": "person", "relation": "wife"}


def test_the_same_person_in_three_memories_is_one_entity(api, owner):
    save(api, "wife's name", "Wife is called Sofia", [wife()])
    save(api, "wife's job", "Sofia works as a nurse", [wife("sofía")])
    save(api, "anniversary", "Anniversary with Sofia is in May", [{"name": "SOFIA"}])

    [entity] = Entity.objects.filter(user=owner)
    assert (entity.name, entity.kind, entity.relation) == ("Sofia", "person", "wife")
    assert entity.memories.count() == 3


def test_a_relation_named_two_ways_becomes_one_entity(api, owner):
    save(api, "wife's job", "Wife works as a nurse", [{"name": "my wife", "relation": "wife"}])
    save(api, "wife's name", "Wife is called Sofia", [wife()])

    [entity] = Entity.objects.filter(user=owner)
    assert (entity.name, entity.aliases) == ("Sofia", ["my wife"])
    assert entity.memories.count() == 2


def test_the_api_lists_reads_edits_and_merges_the_callers_entities(api, owner):
    save(
        api,
        "pets",
        "Has two dogs, Pip and Olive",
        [
            {"name": "Pip", "kind": "pet", "relation": "dog"},
            {"name": "Olive", "kind": "pet", "relation": "dog"},
        ],
    )
    save(
        api,
        "employer",
        "Works at Acme",
        [{"name": "Acme", "kind": "organisation", "relation": "employer"}],
    )
    save(api, "vet", "Pipster sees the vet on Fridays", [{"name": "Pipster", "kind": "pet"}])

    listed = api.get(URL).json()["data"]
    dogs = api.get(URL, {"relation": "dog"}).json()["data"]
    organisations = api.get(URL, {"kind": "organisation"}).json()["data"]
    assert {e["name"] for e in listed} == {"Pip", "Olive", "Acme", "Pipster"}
    assert {e["name"] for e in dogs} == {"Pip", "Olive"} and all(
        e["memory_count"] == 1 for e in dogs
    )
    assert [e["name"] for e in organisations] == ["Acme"]

    pip = next(e for e in dogs if e["name"] == "Pip")
    pipster = next(e for e in listed if e["name"] == "Pipster")
    merged = api.post(f"{URL}/{pip['id']}/merge", {"entity_ids": [pipster["id"]]}, format="json")
    assert merged.status_code == 200, merged.content[:500]
    assert merged.json()["aliases"] == ["Pipster"]
    assert {m["key"] for m in merged.json()["memories"]} == {"pets", "vet"}
    assert not Entity.objects.filter(id=pipster["id"]).exists()

    edited = api.patch(f"{URL}/{pip['id']}", {"name": "Pippin", "aliases": ["Pip"]}, format="json")
    assert edited.status_code == 200, edited.content[:500]
    assert (edited.json()["name"], edited.json()["aliases"]) == ("Pippin", ["Pip"])
    save(api, "walks", "Walks Pip every morning", [{"name": "pip"}])
    assert Entity.objects.get(id=pip["id"]).memories.count() == 3


def test_another_users_entity_is_a_404(api, other_api):
    save(api, "wife's name", "Wife is called Sofia", [wife()])
    [entity] = Entity.objects.all()

    assert_error(other_api.get(f"{URL}/{entity.id}"), 404, "id")
    assert_error(other_api.patch(f"{URL}/{entity.id}", {"name": "x"}, format="json"), 404, "id")
    assert_error(
        other_api.post(f"{URL}/{entity.id}/merge", {"entity_ids": [str(entity.id)]}, format="json"),
        404,
        "id",
    )
    assert other_api.get(URL).json()["data"] == []
    assert Entity.objects.get(id=entity.id).name == "Sofia"


def test_a_merge_with_another_users_entity_is_a_404_and_changes_nothing(api, other_api):
    save(api, "wife's name", "Wife is called Sofia", [wife()])
    save(other_api, "wife's name", "Wife is called Ana", [wife("Ana")])
    mine, theirs = Entity.objects.order_by("created_at")

    response = api.post(f"{URL}/{mine.id}/merge", {"entity_ids": [str(theirs.id)]}, format="json")

    assert_error(response, 404, "entity_ids")
    assert Entity.objects.count() == 2


@pytest.mark.parametrize(
    "entities, field",
    [
        ([{"name": ""}], "entities"),
        ([{"name": "Sofia", "kind": "dragon"}], "entities"),
        ([{"name": "Sofia", "colour": "red"}], "entities"),
        ("Sofia", "entities"),
    ],
)
def test_a_bad_entity_is_a_400_naming_entities_and_writes_nothing(api, entities, field):
    response = api.post(
        "/api/memories", {"key": "k", "value": "v", "entities": entities}, format="json"
    )

    body = assert_error(response, 400)
    assert any(name.startswith(field) for name in body["fields"]), body
    assert not Memory.objects.exists() and not Entity.objects.exists()


def test_an_unknown_kind_filter_is_a_400(api):
    assert_error(api.get(URL, {"kind": "dragon"}), 400, "kind")


@pytest.mark.parametrize("relation", ["a\x00b", "x" * 101])
def test_a_relation_filter_that_is_not_printable_text_is_a_400(api, relation):
    assert_error(api.get(URL, {"relation": relation}), 400, "relation")


def test_erasing_the_user_erases_their_entities(api, owner):
    save(api, "wife's name", "Wife is called Sofia", [wife()])

    response = api.post("/api/me/erase", {"confirm": owner.username}, format="json")

    assert response.status_code in (200, 202, 204), response.content[:500]
    assert not Entity.objects.exists()


def test_the_rules_read_the_plain_forms_of_people_pets_and_employers():
    found = {
        c.key: c.entities
        for c in extract_by_rules(
            [
                "My wife Sofia lives in Porto. I work at Acme. "
                "My little sister is allergic to peanuts. Our dog Pip is allergic to chicken."
            ]
        )
    }

    assert [(m.name, m.kind, m.relation) for m in found["wife sofia's home"]] == [
        ("Sofia", "person", "wife")
    ]
    assert [(m.name, m.kind, m.relation) for m in found["employer"]] == [
        ("Acme", "organisation", "employer")
    ]
    assert [(m.name, m.relation) for m in found["little sister's allergy to peanuts"]] == [
        ("my sister", "sister")
    ]
    dog = next(mentions for key, mentions in found.items() if key.startswith("dog"))
    assert [(m.name, m.kind, m.relation) for m in dog] == [("Pip", "pet", "dog")]


def test_a_word_that_starts_with_a_relation_names_nobody():
    mentions = entity_mentions(
        "Our friendship means a lot. My neighbourhood is quiet. My childhood was in Porto.", []
    )
    assert mentions == ()
    assert [m.relation for m in entity_mentions("My friend Ana and my neighbour Rui", [])] == [
        "friend",
        "neighbour",
    ]
    assert [m.name for m in entity_mentions("My kids love our dogs", [])] == ["my kid", "my dog"]


def test_an_extraction_by_rules_links_one_entity_per_person_it_names(api, owner):
    from extraction import services as extraction_services
    from tests.extraction.helpers import new_topic, post

    topic_id = new_topic(api)
    post(api, topic_id, "My wife Sofia lives in Porto.")
    post(api, topic_id, "I work at Acme. My wife Sofia is allergic to cats.")
    extraction_services.extract_topic(topic_id=topic_id)

    entities = {entity.name: entity for entity in Entity.objects.filter(user=owner)}
    assert set(entities) == {"Sofia", "Acme"}
    assert entities["Sofia"].relation == "wife" and entities["Sofia"].memories.count() == 2
    assert [m.key for m in entities["Acme"].memories.all()] == ["employer"]


def test_export_and_import_carry_each_memorys_entities(api, other_api, other):
    save(api, "wife's name", "Wife is called Sofia", [wife()])
    save(api, "wife's job", "Sofia works as a nurse", [wife()])
    save(api, "city", "Lives in Porto", [])
    exported = b"".join(api.get("/api/memories/export").streaming_content).decode()

    response = other_api.post("/api/memories/import", exported, content_type="application/x-ndjson")

    assert response.status_code == 200, response.content[:500]
    lines = {line["key"]: line for line in map(json.loads, exported.splitlines())}
    assert lines["wife's name"]["entities"] == [
        {"name": "Sofia", "kind": "person", "relation": "wife", "aliases": []}
    ]
    assert lines["city"]["entities"] == []
    [theirs] = Entity.objects.filter(user=other)
    assert (theirs.name, theirs.relation) == ("Sofia", "wife")
    assert sorted(m.key for m in theirs.memories.all()) == ["wife's job", "wife's name"]


def test_another_tenants_key_for_the_same_external_id_gets_404_and_writes_nothing(db):
    from memories.accounts.tenants import tenant_get_or_create
    from tests.conftest import key_client, new_key

    ours = key_client(new_key("read", "write"), "ext-alice")
    theirs = key_client(
        new_key("read", "write", tenant=tenant_get_or_create(slug="b")), "ext-alice"
    )
    save(ours, "wife's name", "Wife is called Sofia", [wife()])
    [entity] = Entity.objects.all()

    assert theirs.get(URL).json()["data"] == []
    assert_error(theirs.get(f"{URL}/{entity.id}"), 404, "id")
    assert_error(theirs.patch(f"{URL}/{entity.id}", {"name": "x"}, format="json"), 404, "id")
    merge = theirs.post(f"{URL}/{entity.id}/merge", {"entity_ids": [str(entity.id)]}, format="json")
    assert_error(merge, 404, "id")
    search = theirs.get("/api/memories/search", {"q": "what does Sofia like?"}).json()["data"]
    assert all(hit["score_parts"]["entity"] == 0 for hit in search)
    assert Entity.objects.get(id=entity.id).name == "Sofia" and Entity.objects.count() == 1
