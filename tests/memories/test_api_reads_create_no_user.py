"""A service key's reads never create the end user they name: an unknown X-User-Id on a GET
or a POST that only reads (search, the hint, the read tools) acts as a user with no data and
writes no row, so a read after an erasure does not bring the user back. Writes still create
the user on first use (AUTO_PROVISION_USERS)."""

import uuid

import pytest

from memories.models import User
from tests.conftest import key_client, new_key, scoped_client
from tests.memories.helpers import assert_error

NEWCOMER = "ext-never-seen"


@pytest.fixture
def reader(db):
    return key_client(new_key(), NEWCOMER)


def no_user_created() -> bool:
    return not User.objects.filter(external_id=NEWCOMER).exists()


def test_the_reads_of_an_unknown_user_answer_empty_and_create_nothing(reader):
    users_before = User.objects.count()

    listing = reader.get("/api/memories")
    search = reader.get("/api/memories/search", {"q": "where do I live"})
    hint = reader.post("/api/memories/context", {"query": "where do I live"}, format="json")
    counts = reader.get("/api/memories/count")
    topics = reader.get("/api/topics")
    runs = reader.get("/api/extraction-runs")

    assert listing.status_code == 200, listing.content[:300]
    assert (listing.json()["data"], listing.json()["count"]) == ([], 0)
    assert search.status_code == 200 and search.json() == {"data": []}
    assert hint.status_code == 200 and hint.json()["memories"] == []
    assert not hint.json()["hint"]
    assert counts.status_code == 200 and not any(counts.json().values())
    assert topics.json()["data"] == [] and runs.json()["data"] == []
    assert no_user_created() and User.objects.count() == users_before


def test_the_read_tools_create_nothing_and_answer_empty(reader):
    recall = reader.post("/api/tools/memory_recall", {"query": "where do I live"}, format="json")
    context = reader.post("/api/tools/memory_context", {"query": "where do I live"}, format="json")

    assert recall.status_code == 200, recall.content[:300]
    assert context.status_code == 200, context.content[:300]
    assert recall.json()["data"] == [] and context.json()["memories"] == []
    assert no_user_created()


def test_one_memory_of_an_unknown_user_is_a_404_and_creates_nothing(reader):
    assert_error(reader.get(f"/api/memories/{uuid.uuid4()}"), 404, "id")
    assert no_user_created()


def test_who_am_i_of_an_unknown_user_names_them_and_creates_nothing(reader):
    me = reader.get("/api/me")

    assert me.status_code == 200, me.content[:300]
    assert me.json()["external_id"] == NEWCOMER
    assert no_user_created()


def test_a_write_still_creates_the_user_and_reads_then_see_it(reader):
    saved = reader.post("/api/memories", {"key": "city", "value": "Lives in Porto"}, format="json")

    assert saved.status_code == 201, saved.content[:300]
    user = User.objects.get(external_id=NEWCOMER)
    assert saved.json()["owner_id"] == str(user.id)
    assert [m["key"] for m in reader.get("/api/memories").json()["data"]] == ["city"]
    assert reader.get("/api/me").json()["id"] == str(user.id)


def test_a_write_tool_creates_the_user(reader):
    saved = reader.post(
        "/api/tools/memory_save",
        {"key": "pet", "value": "Has a cat", "confidence": 1},
        format="json",
    )

    assert saved.status_code == 201, saved.content[:300]
    assert not no_user_created()


def test_a_read_after_an_erasure_does_not_bring_the_user_back(reader):
    reader.post("/api/memories", {"key": "city", "value": "Lives in Porto"}, format="json")
    assert reader.post("/api/me/erase", {"confirm": NEWCOMER}, format="json").status_code == 204
    assert no_user_created()

    listing = reader.get("/api/memories")
    search = reader.get("/api/memories/search", {"q": "Porto"})
    hint = reader.post("/api/memories/context", {"query": "Porto"}, format="json")

    assert listing.json()["data"] == [] and search.json()["data"] == []
    assert hint.json()["memories"] == []
    assert no_user_created()
    # The next write makes a new user, who has none of the erased one's data.
    reader.post("/api/memories", {"key": "pet", "value": "Has a dog"}, format="json")
    [user] = User.objects.filter(external_id=NEWCOMER)
    assert [m["key"] for m in reader.get("/api/memories").json()["data"]] == ["pet"]
    assert user.is_active


def test_a_read_key_alone_reads_an_unknown_user_and_creates_nothing(db):
    client = scoped_client("read", external_id=NEWCOMER)

    assert client.get("/api/memories").json()["data"] == []
    assert no_user_created()


def test_a_malformed_user_id_on_a_read_is_still_a_400(db):
    client = key_client(new_key(), "x" * 256)

    assert_error(client.get("/api/memories"), 400, "X-User-Id")


def test_without_provisioning_a_read_of_an_unknown_user_is_still_404(db, settings):
    settings.AUTO_PROVISION_USERS = False

    assert_error(key_client(new_key(), NEWCOMER).get("/api/memories"), 404, "X-User-Id")
