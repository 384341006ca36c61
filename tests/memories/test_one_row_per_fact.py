"""One row per fact on every write path (POST /api/memories, its batch, memory_save), keys
that name one fact (a new value supersedes the current one), and facts that know their time
(valid_from, valid_until, as_of recall, restore)."""

from datetime import datetime, timedelta

import pytest

from memories.models import Memory, MemoryRevision, Status
from tests.memories.helpers import assert_error, make_memory, make_pending


def save(api, **body):
    return api.post("/api/memories", body, format="json")


def tool_save(api, **arguments):
    arguments.setdefault("confidence", 0.9)
    return api.post("/api/tools/memory_save", arguments, format="json")


def current(user, key: str | None = None) -> list[Memory]:
    rows = Memory.objects.filter(user=user, status=Status.ACTIVE, deleted_at__isnull=True)
    if key is not None:
        rows = rows.filter(key_normalised=key)
    return list(rows.order_by("created_at"))


def hint(api, query: str, **extra) -> dict:
    response = api.post("/api/memories/context", {"query": query, **extra}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def search(api, q: str, **params) -> list[dict]:
    response = api.get("/api/memories/search", {"q": q, **params})
    assert response.status_code == 200, response.content
    return response.json()["data"]


# --- The same fact ------------------------------------------------------------------------------


def test_saving_the_same_fact_three_ways_keeps_one_memory_and_one_hint_line(api, owner):
    first = save(api, key="tea", value="Likes green tea")
    again = save(api, key="Tea", value="likes green tea.")
    by_tool = tool_save(api, key="tea", value="Likes green tea")
    in_batch = api.post(
        "/api/memories/batch",
        {"memories": [{"key": "tea", "value": "Likes GREEN tea!"}]},
        format="json",
    )

    assert first.status_code == 201 and first.json()["created"] is True
    memory_id = first.json()["id"]
    assert again.status_code == 200 and again.json()["id"] == memory_id
    assert again.json()["created"] is False and again.json()["superseded_ids"] == []
    assert by_tool.status_code == 200 and by_tool.json()["memory"]["id"] == memory_id
    assert by_tool.json()["created"] is False
    assert in_batch.status_code == 200 and in_batch.json()["data"][0]["id"] == memory_id
    assert [m.id.hex for m in current(owner)] == [memory_id.replace("-", "")]
    # The stored spelling stays the first one's.
    assert current(owner)[0].key == "tea" and current(owner)[0].value == "Likes green tea"
    block = hint(api, "What do I like to drink?")["hint"]
    assert block.count("Likes green tea") == 1


def test_a_batch_holding_the_same_item_twice_writes_one_row(api, owner):
    item = {"key": "editor", "value": "Uses Helix"}

    response = api.post("/api/memories/batch", {"memories": [item, item]}, format="json")

    assert response.status_code == 201
    first, second = response.json()["data"]
    assert first["id"] == second["id"]
    assert (first["created"], second["created"]) == (True, False)
    assert len(current(owner)) == 1
    assert MemoryRevision.objects.filter(memory__user=owner).count() == 1


def test_saving_again_raises_confidence_and_importance_with_a_revision(api, owner):
    first = save(api, key="diet", value="Vegetarian", confidence=0.6, importance=0.4)
    lower = save(api, key="diet", value="Vegetarian", confidence=0.3, importance=0.2)
    higher = save(api, key="diet", value="Vegetarian", confidence=0.9, importance=0.8)

    memory_id = first.json()["id"]
    assert lower.status_code == higher.status_code == 200
    assert lower.json()["confidence"] == 0.6 and lower.json()["importance"] == 0.4
    assert higher.json()["confidence"] == 0.9 and higher.json()["importance"] == 0.8
    revisions = MemoryRevision.objects.filter(memory_id=memory_id).order_by("id")
    assert [r.action for r in revisions] == ["create", "edit"]
    edit = revisions.last()
    assert (edit.before["confidence"], edit.after["confidence"]) == (0.6, 0.9)
    assert edit.note == "saved again"


def test_the_same_key_and_value_in_another_scope_is_another_fact(api, owner):
    project = api.post("/api/projects", {"name": "Shop"}, format="json").json()

    mine = save(api, key="db", value="Uses PostgreSQL")
    projects = save(
        api, key="db", value="Uses PostgreSQL", scope="project", project_id=project["id"]
    )

    assert mine.status_code == projects.status_code == 201
    assert mine.json()["id"] != projects.json()["id"]


# --- A key names one fact ----------------------------------------------------------------------


def test_a_new_value_of_a_key_supersedes_the_current_memory(api, owner):
    berlin = save(api, key="home", value="Lives in Berlin").json()

    lisbon = save(api, key="home", value="I moved from Berlin to Lisbon")

    assert lisbon.status_code == 201
    body = lisbon.json()
    assert body["superseded_ids"] == [berlin["id"]]
    assert body["supersedes_id"] == berlin["id"]
    assert body["valid_until"] is None and body["superseded_by_id"] is None
    old = api.get(f"/api/memories/{berlin['id']}").json()
    assert old["status"] == "archived"
    assert old["superseded_by_id"] == body["id"]
    assert old["valid_until"] is not None and old["valid_until"] >= old["valid_from"]
    archive = MemoryRevision.objects.filter(memory_id=berlin["id"], action="archive").get()
    assert archive.note == f"superseded by {body['id']}"
    assert archive.after["superseded_by_id"] == body["id"]
    assert [m.value for m in current(owner)] == ["I moved from Berlin to Lisbon"]
    found = search(api, "where do I live")
    assert [hit["value"] for hit in found] == ["I moved from Berlin to Lisbon"]
    assert "Lives in Berlin" not in hint(api, "Where do I live?")["hint"]


def test_replace_false_keeps_both_and_a_later_replacement_replaces_both(api, owner):
    peanuts = save(api, key="allergy", value="Allergic to peanuts").json()
    shellfish = save(api, key="allergy", value="Allergic to shellfish", replace=False)

    assert shellfish.status_code == 201 and shellfish.json()["superseded_ids"] == []
    assert len(current(owner, "allergy")) == 2

    none = save(api, key="allergy", value="No allergies any more")

    assert sorted(none.json()["superseded_ids"]) == sorted([peanuts["id"], shellfish.json()["id"]])
    assert [m.value for m in current(owner, "allergy")] == ["No allergies any more"]


def test_batch_items_apply_in_order(api, owner):
    items = [
        {"key": "city", "value": "Lives in Porto"},
        {"key": "city", "value": "Lives in Braga"},
        {"key": "city", "value": "Lives in Braga"},
    ]

    response = api.post("/api/memories/batch", {"memories": items}, format="json")

    porto, braga, braga_again = response.json()["data"]
    assert response.status_code == 201
    assert porto["status"] == "archived" and porto["superseded_by_id"] == braga["id"]
    assert braga["superseded_ids"] == [porto["id"]]
    assert braga_again["id"] == braga["id"] and braga_again["created"] is False
    assert [m.value for m in current(owner)] == ["Lives in Braga"]


def test_memory_save_replaces_too_and_its_description_says_so(api, owner):
    old = tool_save(api, key="editor", value="Uses Vim").json()["memory"]

    new = tool_save(api, key="editor", value="Uses Zed")
    kept = tool_save(api, key="editor", value="Uses Emacs at work", replace=False)

    assert new.status_code == 201 and new.json()["superseded_ids"] == [old["id"]]
    assert kept.status_code == 201 and kept.json()["superseded_ids"] == []
    assert sorted(m.value for m in current(owner)) == ["Uses Emacs at work", "Uses Zed"]
    tools = {t["function"]["name"]: t["function"] for t in api.get("/api/tools").json()["data"]}
    assert "A key names one fact" in tools["memory_save"]["description"]
    assert "replace" in tools["memory_save"]["parameters"]["properties"]


def test_replace_must_be_a_boolean(api, owner):
    assert_error(save(api, key="a", value="b", replace="no"), 400, "replace")
    assert Memory.objects.count() == 0


def test_a_replaced_key_is_one_line_of_the_hint(api, owner):
    save(api, key="home", value="Lives in Berlin")
    save(api, key="home", value="Lives in Lisbon")

    block = hint(api, "Where do I live?")["hint"]

    assert "Lives in Lisbon" in block and "Berlin" not in block


def test_a_near_duplicate_by_meaning_is_listed_and_left_alone(api, owner, settings):
    settings.EXTRACTION_DUPLICATE_SIMILARITY = 0.9
    first = save(api, key="coffee", value="Drinks two cups of coffee every morning").json()

    second = save(api, key="morning drink", value="Has two cups of coffee each morning")

    assert second.status_code == 201
    assert second.json()["similar_ids"] == [first["id"]]
    assert second.json()["superseded_ids"] == []
    assert len(current(owner)) == 2


def test_an_unrelated_memory_is_not_similar(api, owner):
    save(api, key="coffee", value="Drinks two cups of coffee every morning")

    response = save(api, key="pet", value="Has a grey cat called Miso")

    assert response.json()["similar_ids"] == []


# --- Time ---------------------------------------------------------------------------------------


def test_valid_from_is_the_creation_or_the_date_the_writer_gives(api, owner):
    now = save(api, key="sport", value="Plays tennis").json()
    dated = save(api, key="job", value="Works at Acme", valid_from="2024-03-01T00:00:00Z").json()

    created = datetime.fromisoformat(now["created_at"])
    assert abs(datetime.fromisoformat(now["valid_from"]) - created) < timedelta(seconds=1)
    assert dated["valid_from"].startswith("2024-03-01")
    assert_error(
        save(api, key="x", value="y", valid_from="2999-01-01T00:00:00Z"), 400, "valid_from"
    )


def test_as_of_recalls_what_was_current_then(api, owner):
    save(api, key="home", value="Lives in Berlin", valid_from="2025-01-01T00:00:00Z")
    save(api, key="home", value="Lives in Lisbon", valid_from="2026-06-01T00:00:00Z")

    now = [hit["value"] for hit in search(api, "where do I live")]
    then = [hit["value"] for hit in search(api, "where do I live", as_of="2026-01-15")]
    before_all = search(api, "where do I live", as_of="2024-06-01")
    then_hint = hint(api, "Where did I live?", as_of="2026-01-15T12:00:00Z")["hint"]

    assert now == ["Lives in Lisbon"]
    assert then == ["Lives in Berlin"]
    assert before_all == []
    assert "Lives in Berlin" in then_hint and "Lisbon" not in then_hint


def test_as_of_must_be_a_date(api, owner):
    body = assert_error(
        api.get("/api/memories/search", {"q": "x", "as_of": "last week"}), 400, "as_of"
    )
    assert "YYYY-MM-DD" in body["fields"]["as_of"][0]
    response = api.post(
        "/api/memories/context", {"query": "x", "as_of": "2026-13-01"}, format="json"
    )
    assert_error(response, 400, "as_of")


def test_a_rejected_proposal_was_never_current(api, owner):
    proposal = make_pending(owner, key="home", value="Lives in Oslo")
    assert api.post(f"/api/memories/{proposal.id}/reject").status_code == 200

    assert search(api, "where do I live", as_of="2999-01-01") == []


def test_restoring_a_superseded_memory_makes_it_current_and_supersedes_the_holder(api, owner):
    berlin = save(api, key="home", value="Lives in Berlin").json()
    lisbon = save(api, key="home", value="Lives in Lisbon").json()

    response = api.post(f"/api/memories/{berlin['id']}/restore")

    assert response.status_code == 200, response.content
    restored = response.json()
    assert restored["status"] == "active"
    assert restored["valid_until"] is None and restored["superseded_by_id"] is None
    assert restored["valid_from"] > berlin["valid_from"]
    replaced = api.get(f"/api/memories/{lisbon['id']}").json()
    assert replaced["status"] == "archived" and replaced["superseded_by_id"] == berlin["id"]
    assert [m.value for m in current(owner)] == ["Lives in Berlin"]


def test_restoring_an_active_memory_is_not_found(api, owner):
    memory = save(api, key="home", value="Lives in Berlin").json()

    assert_error(api.post(f"/api/memories/{memory['id']}/restore"), 404, "id")


def test_approving_an_extracted_replacement_sets_the_time_fields(api, owner):
    old = make_memory(owner, key="home", value="Lives in Berlin")
    new = make_pending(owner, key="home", value="Lives in Lisbon", supersedes=old)

    approved = api.post(f"/api/memories/{new.id}/approve").json()

    old.refresh_from_db()
    assert old.status == Status.ARCHIVED
    assert str(old.superseded_by_id) == approved["id"]
    assert old.valid_until.isoformat().replace("+00:00", "Z") == approved["valid_from"]
    assert approved["valid_from"] >= approved["created_at"]


@pytest.mark.parametrize("path", ["/api/memories", "/api/memories/batch"])
def test_a_bad_item_writes_nothing(api, owner, path):
    save(api, key="home", value="Lives in Berlin")
    body = {"key": "home", "value": "Lives in Lisbon", "importance": "high"}
    if path.endswith("batch"):
        body = {"memories": [{"key": "home", "value": "Lives in Lisbon"}, body]}

    response = api.post(path, body, format="json")

    assert response.status_code == 400
    assert [m.value for m in current(owner)] == ["Lives in Berlin"]
    assert Memory.objects.filter(user=owner).count() == 1


def test_memory_recall_takes_as_of(api, owner):
    save(api, key="home", value="Lives in Berlin", valid_from="2025-01-01T00:00:00Z")
    save(api, key="home", value="Lives in Lisbon", valid_from="2026-06-01T00:00:00Z")

    def recall(**arguments):
        response = api.post(
            "/api/tools/memory_recall", {"query": "where do I live", **arguments}, format="json"
        )
        assert response.status_code == 200, response.content
        return [hit["value"] for hit in response.json()["data"]]

    assert recall(as_of=None) == ["Lives in Lisbon"]
    assert recall(as_of="2026-01-15") == ["Lives in Berlin"]
    bad = api.post("/api/tools/memory_recall", {"query": "x", "as_of": "yesterday"}, format="json")
    assert_error(bad, 400, "as_of")


def test_approving_a_proposal_whose_key_was_saved_since_replaces_that_memory(api, owner):
    proposal = make_pending(owner, key="home", value="Lives in Lisbon")
    saved = save(api, key="Home", value="Lives in Porto").json()

    approved = api.post(f"/api/memories/{proposal.id}/approve").json()

    assert approved["supersedes_id"] == saved["id"]
    replaced = api.get(f"/api/memories/{saved['id']}").json()
    assert replaced["status"] == "archived" and replaced["superseded_by_id"] == approved["id"]
    assert [m.value for m in current(owner)] == ["Lives in Lisbon"]


def test_a_merge_archives_the_others_as_superseded_by_the_kept_memory(owner):
    from memories import services

    keep = make_memory(owner, key="coffee", value="Drinks coffee")
    other = make_memory(owner, key="morning coffee", value="Drinks coffee every morning")

    services.memory_merge(keep=keep, others=[other], actor=owner, changes={}, vector=None)

    other.refresh_from_db()
    assert other.status == Status.ARCHIVED and other.superseded_by_id == keep.id
    assert other.valid_until is not None


def test_a_large_batch_does_not_look_similar_memories_up(api, owner, settings):
    settings.SAVE_SIMILAR_BATCH_MAX_ITEMS = 2
    small = [{"key": f"k{i}", "value": f"Fact number {i}"} for i in range(2)]
    large = [{"key": f"k{i}", "value": f"Other fact {i}"} for i in range(2, 5)]

    looked_up = api.post("/api/memories/batch", {"memories": small}, format="json").json()
    skipped = api.post("/api/memories/batch", {"memories": large}, format="json").json()

    assert all(item["similar_ids"] == [] for item in looked_up["data"])
    assert all(item["similar_ids"] is None for item in skipped["data"])


# --- Edits of the key -----------------------------------------------------------------------


def test_editing_a_key_into_a_held_key_supersedes_the_holder_as_a_save_would(api, owner):
    holder = save(api, key="home", value="Lives in Porto").json()
    moved = save(api, key="city", value="Lives in Lisbon").json()

    response = api.patch(f"/api/memories/{moved['id']}", {"key": "Home"}, format="json")

    assert response.status_code == 200, response.content
    assert response.json()["status"] == "active"
    assert [m.id for m in current(owner, "home")] == [Memory.objects.get(id=moved["id"]).id]
    old = Memory.objects.get(id=holder["id"])
    assert old.status == Status.ARCHIVED and old.valid_until is not None
    assert str(old.superseded_by_id) == moved["id"]
    archive = MemoryRevision.objects.filter(memory=old).latest("created_at")
    assert archive.action == "archive" and moved["id"] in archive.note
    assert [hit["id"] for hit in search(api, "where do I live")] == [moved["id"]]


def test_editing_a_key_elsewhere_in_its_group_leaves_the_other_holders(api, owner):
    first = save(api, key="allergy", value="Allergic to peanuts").json()
    second = api.post(
        "/api/memories",
        {"key": "allergy", "value": "Allergic to cats", "replace": False},
        format="json",
    ).json()

    # The same key as far as facts go (case, punctuation): still two facts of it.
    response = api.patch(f"/api/memories/{second['id']}", {"key": "Allergy!"}, format="json")
    value_edit = api.patch(
        f"/api/memories/{first['id']}", {"value": "Allergic to nuts"}, format="json"
    )

    assert (response.status_code, value_edit.status_code) == (200, 200)
    assert len(current(owner, "allergy")) == 2


def test_a_pending_memory_edited_into_a_held_key_replaces_it_only_when_approved(api, owner):
    holder = save(api, key="home", value="Lives in Porto").json()
    pending = make_pending(owner, key="town", value="Lives in Faro")

    edited = api.patch(f"/api/memories/{pending.id}", {"key": "home"}, format="json")

    assert edited.status_code == 200, edited.content
    assert [str(m.id) for m in current(owner, "home")] == [holder["id"]]
    approved = api.post(f"/api/memories/{pending.id}/approve")
    assert approved.status_code == 200, approved.content
    assert [m.id for m in current(owner, "home")] == [pending.id]
