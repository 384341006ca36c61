"""The OpenAPI schema types what the API takes and gives (issue 42): a batch's items as the
body of one create, a message list's items as one message, a revision's before/after as the
snapshot object, instead of `{}` (anything) and an untyped `nullable`. The generated
TypeScript client reads these types (clients/typescript/src/schema.d.ts)."""

from drf_spectacular.generators import SchemaGenerator


def schemas() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def test_batch_items_are_create_bodies_and_messages_are_message_objects():
    components = schemas()

    assert components["MemoryBatchCreateRequest"]["properties"]["memories"]["items"] == ref(
        "MemoryCreateRequest"
    )
    assert components["MessageBatchRequest"]["properties"]["messages"]["items"] == ref(
        "MessageRequest"
    )
    work_session = components["WorkSessionMessageBatchRequest"]["properties"]["messages"]
    assert work_session["items"] == ref("WorkSessionMessageRequest")
    assert set(components["MessageRequest"]["properties"]) == {"role", "content"}
    assert {"key", "value"} <= set(components["MemoryCreateRequest"]["required"])


def test_revision_before_and_after_are_snapshots_before_nullable():
    components = schemas()
    revision = components["Revision"]["properties"]

    assert revision["before"]["allOf"] == [ref("RevisionSnapshot")]
    assert revision["before"]["nullable"] is True
    assert revision["after"]["allOf"] == [ref("RevisionSnapshot")]
    assert not revision["after"].get("nullable")
    snapshot = components["RevisionSnapshot"]
    assert snapshot["type"] == "object"
    assert set(snapshot["properties"]) == {
        "key",
        "value",
        "category",
        "importance",
        "confidence",
        "pinned",
        "metadata",
        "status",
        "scope",
        "supersedes_id",
        "superseded_by_id",
        "valid_from",
        "valid_until",
        "expires_at",
        "retention_expires_at",
        "retention_rule_id",
    }
    assert snapshot["properties"]["importance"]["type"] == "number"


def test_a_revision_answered_by_the_api_fits_its_snapshot_schema(api):
    created = api.post("/api/memories", {"key": "tea", "value": "Likes tea"}, format="json")
    api.patch(f"/api/memories/{created.json()['id']}", {"value": "Likes green tea"}, format="json")

    history = api.get(f"/api/memories/{created.json()['id']}/history").json()["data"]

    properties = set(schemas()["RevisionSnapshot"]["properties"])
    edit = next(revision for revision in history if revision["action"] == "edit")
    assert set(edit["before"]) == set(edit["after"]) == properties
    create = next(revision for revision in history if revision["action"] == "create")
    assert create["before"] is None
