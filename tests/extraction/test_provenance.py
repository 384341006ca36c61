"""Provenance: every extracted memory names its conversation or work session and the messages
that say it (source_topic_id, source_work_session_id, source_message_ids), from the rules
and from the model's `evidence`, which the server checks against the messages it sent."""

import json

import pytest

from memories.models import Memory, MemoryRevision
from tests.extraction.helpers import (
    accepted,
    answer,
    conversation_part,
    extract,
    extract_work,
    memory,
    new_project,
    new_topic,
    new_work_session,
    post,
    post_work,
)
from tests.memories.helpers import make_memory


def pending(api) -> dict:
    """The caller's pending memories by key, as the API shows them."""
    response = api.get("/api/memories", {"status": "pending_review"})
    assert response.status_code == 200, response.content[:500]
    return {m["key"]: m for m in response.json()["data"]}


def create_note(memory_id: str) -> str:
    return MemoryRevision.objects.get(memory_id=memory_id, action="create").note


# --- The rule-based extractor ------------------------------------------------------------------


def test_a_rule_based_memory_names_its_conversation_and_the_message_it_read(api, owner, no_llm):
    topic_id = new_topic(api, title="Moving")
    post(api, topic_id, "Hello there!")
    said = post(api, topic_id, "My name is Dana and I live in Lisbon.")
    post(api, topic_id, "Nice to meet you, Dana.", role="assistant")
    job = post(api, topic_id, "I work as a nurse at St. Mary hospital.")

    accepted(extract(api, topic_id), "done")

    memories = pending(api)
    assert set(memories) == {"name", "home", "job"}
    for key in ("name", "home"):
        assert memories[key]["source_topic_id"] == topic_id
        assert memories[key]["source_work_session_id"] is None
        assert memories[key]["source_message_ids"] == [said["id"]]
    assert memories["job"]["source_message_ids"] == [job["id"]]


def test_a_fact_said_in_two_messages_cites_both(api, owner, no_llm):
    topic_id = new_topic(api)
    first = post(api, topic_id, "I am allergic to peanuts.")
    post(api, topic_id, "What can I cook tonight?")
    again = post(api, topic_id, "Remember that I am allergic to peanuts.")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["created"] == 1
    [allergy] = pending(api).values()
    assert allergy["source_message_ids"] == [first["id"], again["id"]]


def test_a_work_session_memory_names_the_work_session_and_its_messages(
    api, owner, no_llm, settings
):
    settings.EXTRACTION_WORK_USER_MESSAGES = 2
    session_id = new_work_session(api, new_project(api))
    post_work(api, session_id, "Run the migrations first.")
    post_work(api, session_id, "Done.", role="assistant")
    post_work(api, session_id, "Remember that deploys go out on Tuesdays.")

    accepted(extract_work(api, session_id), "done")

    [saved] = pending(api).values()
    stored = Memory.objects.get(id=saved["id"])
    message = stored.source_work_session.messages.get(content__startswith="Remember")
    assert saved["source_work_session_id"] == session_id
    assert saved["source_topic_id"] is None
    assert saved["source_message_ids"] == [message.id]


# --- The model's evidence ----------------------------------------------------------------------


@pytest.fixture
def chat(api):
    """A topic of five messages (a system one among them, which the model never sees)."""
    topic_id = new_topic(api)
    ids = [
        post(api, topic_id, text, role=role)["id"]
        for role, text in [
            ("system", "You are a travel assistant."),
            ("user", "I moved to Lisbon last month."),
            ("assistant", "Welcome! Do you like it there?"),
            ("user", "Yes, and I am vegetarian, so the food is a challenge."),
            ("user", "Also I keep bees."),
        ]
    ]
    return {"topic_id": topic_id, "ids": ids}


def test_the_prompt_numbers_the_messages_it_shows_and_asks_for_evidence(api, llm, chat):
    llm.chat_answers.append(answer())

    accepted(extract(api, chat["topic_id"]), "done")

    [request] = llm.chat_requests()
    shown = conversation_part(request)
    assert "[1] user: I moved to Lisbon last month." in shown
    assert "[2] assistant: Welcome! Do you like it there?" in shown
    assert "[4] user: Also I keep bees." in shown
    assert "[5]" not in shown and "travel assistant" not in shown
    assert '"evidence"' in request["messages"][0]["content"]


def test_the_models_evidence_becomes_the_ids_of_the_messages_it_numbered(api, llm, chat):
    ids = chat["ids"]
    llm.chat_answers.append(
        answer(
            memory("city", "Lives in Lisbon", evidence=[1, 2]),
            memory("diet", "Is vegetarian", evidence=[3]),
            memory("hobby", "Keeps bees", evidence=4),
        )
    )

    accepted(extract(api, chat["topic_id"]), "done")

    memories = pending(api)
    assert memories["city"]["source_message_ids"] == [ids[1], ids[2]]
    assert memories["diet"]["source_message_ids"] == [ids[3]]
    assert memories["hobby"]["source_message_ids"] == [ids[4]]
    assert {m["source_topic_id"] for m in memories.values()} == {chat["topic_id"]}
    assert "dropped" not in create_note(memories["city"]["id"])


def test_without_evidence_a_memory_still_names_its_conversation(api, llm, chat):
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    accepted(extract(api, chat["topic_id"]), "done")

    [city] = pending(api).values()
    assert (city["source_topic_id"], city["source_message_ids"]) == (chat["topic_id"], [])


@pytest.mark.parametrize(
    ("evidence", "kept", "dropped"),
    [
        ([2, 9], [1], ["9"]),
        ([0, -1], [], ["0", "-1"]),
        (["2", 2.0, True, None], [], ["'2'", "2.0", "True", "None"]),
        ("the first one", [], ["'the first one'"]),
        ([2, 2, 1], [0, 1], []),
    ],
    ids=["out of range", "zero and negative", "not whole numbers", "not a list", "repeated"],
)
def test_evidence_naming_no_message_sent_is_dropped_and_the_memory_kept_with_a_note(
    api, llm, chat, evidence, kept, dropped
):
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon", evidence=evidence)))

    body = accepted(extract(api, chat["topic_id"]), "done")

    assert body["result"]["created"] == 1
    assert len(llm.chat_requests()) == 1  # no retry for a bad evidence
    [city] = pending(api).values()
    assert city["source_message_ids"] == [chat["ids"][1 + i] for i in kept]
    note = create_note(city["id"])
    if dropped:
        assert note.endswith("names no message shown (1-4): dropped"), note
        assert all(item in note for item in dropped), note
    else:
        assert "dropped" not in note


def test_evidence_counts_only_the_messages_of_this_run(api, llm, chat):
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon", evidence=[1])))
    accepted(extract(api, chat["topic_id"]), "done")
    later = post(api, chat["topic_id"], "I started learning Portuguese.")
    llm.chat_answers.append(answer(memory("language", "Learns Portuguese", evidence=[1, 2])))

    accepted(extract(api, chat["topic_id"]), "done")

    [request] = llm.chat_requests()[1:]
    assert "[1] user: I started learning Portuguese." in conversation_part(request)
    language = pending(api)["language"]
    assert language["source_message_ids"] == [later["id"]]
    assert create_note(language["id"]).endswith("evidence 2 names no message shown (1-1): dropped")


# --- Other memories, and the data of a user ----------------------------------------------------


def test_memories_written_by_hand_have_no_provenance(api, owner):
    response = api.post("/api/memories", {"key": "city", "value": "Lives in Porto"}, format="json")

    assert response.status_code == 201, response.content[:500]
    body = response.json()
    assert (body["source_topic_id"], body["source_work_session_id"]) == (None, None)
    assert body["source_message_ids"] == []
    assert api.get(f"/api/memories/{body['id']}").json()["source_message_ids"] == []


def test_the_export_carries_provenance_and_imports_back(api, owner, no_llm):
    topic_id = new_topic(api)
    said = post(api, topic_id, "My name is Dana.")
    accepted(extract(api, topic_id), "done")
    make_memory(owner, key="city", value="Lives in Porto")

    export = api.get("/api/memories/export")
    lines = [json.loads(line) for line in b"".join(export.streaming_content).splitlines()]
    imported = api.post(
        "/api/memories/import",
        "\n".join(json.dumps(line) for line in lines),
        content_type="application/x-ndjson",
    )

    name = next(line for line in lines if line["key"] == "name")
    assert (name["source_topic_id"], name["source_message_ids"]) == (topic_id, [said["id"]])
    assert imported.status_code == 200, imported.content[:500]
    assert imported.json() == {
        "created": 0,
        "updated": 0,
        "unchanged": 2,
        "superseded": 0,
        "errors": [],
    }
