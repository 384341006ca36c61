"""Import keeps one row per fact and carries facts' time: normalised matching of lines without
id, supersession of the current holder of a key, and a file holding a fact and its
replacement."""

import uuid

from memories.models import Memory, Status
from tests.conftest import client_for, make_user
from tests.memories.test_api_import import export, import_ok, result


def save(api, **body):
    response = api.post("/api/memories", body, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()


def current_values(user) -> list[str]:
    rows = Memory.objects.filter(user=user, status=Status.ACTIVE, deleted_at__isnull=True)
    return sorted(rows.values_list("value", flat=True))


def test_a_line_without_id_matches_the_fact_as_writes_compare_it(api, owner):
    memory = save(api, key="tea", value="Likes green tea")

    response = import_ok(api, [{"key": "TEA", "value": "likes green tea!"}])

    assert response == result(unchanged=1)
    assert Memory.objects.filter(user=owner).count() == 1
    assert Memory.objects.get(id=memory["id"]).key == "tea"


def test_a_line_with_a_new_value_of_a_key_supersedes_the_current_memory(api, owner):
    berlin = save(api, key="home", value="Lives in Berlin")
    line = {"key": "home", "value": "Lives in Lisbon"}

    dry = import_ok(api, [line], dry_run=True)
    real = import_ok(api, [line])

    assert dry == real == result(created=1, superseded=1)
    old = Memory.objects.get(id=berlin["id"])
    new = Memory.objects.get(user=owner, value="Lives in Lisbon")
    assert old.status == Status.ARCHIVED and old.superseded_by_id == new.id
    assert old.valid_until is not None
    assert current_values(owner) == ["Lives in Lisbon"]


def test_lines_of_one_file_never_supersede_each_other(api, owner):
    lines = [
        {"key": "allergy", "value": "Allergic to peanuts"},
        {"key": "allergy", "value": "Allergic to shellfish"},
    ]

    assert import_ok(api, lines) == result(created=2)
    assert current_values(owner) == ["Allergic to peanuts", "Allergic to shellfish"]


def test_a_file_with_a_fact_and_its_replacement_moves_to_another_account(api, owner):
    save(api, key="home", value="Lives in Berlin", valid_from="2025-01-01T00:00:00Z")
    save(api, key="home", value="Lives in Lisbon", valid_from="2026-06-01T00:00:00Z")
    lines = export(api)
    # As on another installation: the ids are free there.
    Memory.objects.filter(user=owner).delete()
    newcomer = make_user("newcomer")
    client = client_for(newcomer)
    save(client, key="home", value="Lives in Madrid")

    response = import_ok(client, lines)

    assert response == result(created=2, superseded=1)
    berlin = Memory.objects.get(user=newcomer, value="Lives in Berlin")
    lisbon = Memory.objects.get(user=newcomer, value="Lives in Lisbon")
    madrid = Memory.objects.get(user=newcomer, value="Lives in Madrid")
    assert berlin.status == Status.ARCHIVED and berlin.superseded_by_id == lisbon.id
    assert berlin.valid_from.year == 2025 and berlin.valid_until.year == 2026
    assert madrid.status == Status.ARCHIVED and madrid.superseded_by_id == lisbon.id
    assert lisbon.status == Status.ACTIVE and lisbon.valid_until is None
    then = client.get("/api/memories/search", {"q": "where do I live", "as_of": "2025-06-01"})
    assert [hit["value"] for hit in then.json()["data"]] == ["Lives in Berlin"]


def test_an_export_with_both_imported_into_the_same_account_changes_nothing(api, owner):
    save(api, key="home", value="Lives in Berlin")
    save(api, key="home", value="Lives in Lisbon")
    lines = export(api)

    assert import_ok(api, lines) == result(unchanged=2)
    without_ids = [{k: v for k, v in line.items() if k != "id"} for line in lines]
    assert import_ok(api, without_ids) == result(unchanged=2)
    assert Memory.objects.filter(user=owner).count() == 2


def test_a_superseded_by_id_naming_no_memory_of_the_caller_is_cleared(api, owner):
    line = {
        "key": "home",
        "value": "Lives in Oslo",
        "status": "archived",
        "valid_from": "2024-01-01T00:00:00Z",
        "valid_until": "2025-01-01T00:00:00Z",
        "superseded_by_id": str(uuid.uuid4()),
    }

    assert import_ok(api, [line]) == result(created=1)

    memory = Memory.objects.get(user=owner)
    assert memory.superseded_by_id is None
    assert memory.valid_until.year == 2025


def test_valid_until_needs_an_archived_line_and_follows_valid_from(api, owner):
    lines = [
        {"key": "a", "value": "b", "valid_until": "2025-01-01T00:00:00Z"},
        {
            "key": "c",
            "value": "d",
            "status": "archived",
            "valid_from": "2025-01-01T00:00:00Z",
            "valid_until": "2024-01-01T00:00:00Z",
        },
    ]

    response = import_ok(api, lines)

    assert [(e["line"], e["field"]) for e in response["errors"]] == [
        (1, "valid_until"),
        (2, "valid_until"),
    ]
    assert Memory.objects.filter(user=owner).count() == 0
