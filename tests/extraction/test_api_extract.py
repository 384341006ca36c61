"""POST /api/memories/extract/{topic_id}: conversation extraction, called directly, with the
real OpenAI client talking to the fake provider on 127.0.0.1."""

import uuid

from extraction.models import ExtractionRun, RunStatus
from memories.models import Memory, MemoryRevision, Source, Status
from memories.recall.hint import CLOSE, OPEN, PREAMBLE
from tests.extraction.helpers import (
    accepted,
    answer,
    conversation_part,
    cursor_of,
    extract,
    memory,
    new_topic,
    post,
    runs_of,
    transcript,
)
from tests.memories.helpers import assert_error, make_memory


def test_it_answers_202_with_the_task_id_status_and_counts(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 0}
    uuid.UUID(body["task_id"])


def test_extracted_memories_are_pending_review_with_source_conversation(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month and I am vegetarian.")
    llm.chat_answers.append(
        answer(
            memory("city", "Lives in Lisbon", importance=0.7, confidence=0.9),
            memory("diet", "Is vegetarian", category="preference"),
        )
    )

    accepted(extract(api, topic_id), "done")

    rows = {m.key: m for m in Memory.objects.filter(user=owner)}
    assert set(rows) == {"city", "diet"}
    city = rows["city"]
    assert city.value == "Lives in Lisbon"
    assert city.status == Status.PENDING_REVIEW
    assert city.source == Source.CONVERSATION
    assert city.scope == "user"
    assert city.importance == 0.7
    assert city.confidence == 0.9
    assert rows["diet"].category == "preference"
    assert MemoryRevision.objects.filter(memory=city, action="create").count() == 1
    assert api.get("/api/memories/count").json() == {"active": 0, "pending": 2}


def test_session_scope_candidates_land_on_the_topic(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "For this trip plan, keep the budget under 2000 euros.")
    llm.chat_answers.append(
        answer(memory("budget", "Trip budget under 2000 euros", scope="session"))
    )

    accepted(extract(api, topic_id), "done")

    saved = Memory.objects.get(user=owner)
    assert saved.scope == "session"
    assert str(saved.topic_id) == topic_id


def test_the_prompt_carries_user_and_assistant_messages_only(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "You are Ada, a helpful assistant. SECRET-SYSTEM-PROMPT", role="system")
    post(api, topic_id, "I keep bees on my balcony.")
    post(api, topic_id, "How lovely! How many hives do you have?", role="assistant")
    post(api, topic_id, "Two hives, since 2021.")

    accepted(extract(api, topic_id), "done")

    [request] = llm.chat_requests()
    assert request["model"] == "fake-model"
    shown = conversation_part(request)
    assert "I keep bees on my balcony." in shown
    assert "How lovely! How many hives do you have?" in shown
    assert "Two hives, since 2021." in shown
    assert "SECRET-SYSTEM-PROMPT" not in transcript(request)
    assert shown.index("I keep bees") < shown.index("How lovely") < shown.index("Two hives")


def test_the_prompt_leaves_out_a_memory_hint_an_assistant_echoed(api, owner, llm):
    topic_id = new_topic(api)
    hint = f"{OPEN}\n{PREAMBLE}\n- city: Lives in Reykjavik\n{CLOSE}"
    post(api, topic_id, "What should I cook tonight?")
    post(api, topic_id, f"{hint}\nHow about a mushroom risotto?", role="assistant")

    accepted(extract(api, topic_id), "done")

    [request] = llm.chat_requests()
    shown = transcript(request)
    assert "What should I cook tonight?" in shown
    assert "How about a mushroom risotto?" in shown
    assert "Reykjavik" not in shown
    assert OPEN not in shown
    assert CLOSE not in shown
    assert PREAMBLE not in shown


def test_a_second_run_without_new_messages_writes_nothing_and_calls_no_model(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    accepted(extract(api, topic_id), "done")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon, Portugal")))

    body = accepted(extract(api, topic_id), "skipped")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 0}
    assert body["reason"]
    assert len(llm.chat_requests()) == 1
    assert Memory.objects.filter(user=owner).count() == 1


def test_only_system_messages_since_the_last_run_call_no_model(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    accepted(extract(api, topic_id), "done")
    post(api, topic_id, "New system prompt: be brief.", role="system")

    accepted(extract(api, topic_id), "skipped")

    assert len(llm.chat_requests()) == 1


def test_a_later_run_reads_only_messages_after_the_last_extraction(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "FIRST: I moved to Lisbon last month.")
    post(api, topic_id, "FIRST-REPLY: Welcome to Lisbon!", role="assistant")
    accepted(extract(api, topic_id), "done")
    read_to = cursor_of(topic_id)
    assert read_to > 0
    post(api, topic_id, "SECOND: I started learning Portuguese.")

    accepted(extract(api, topic_id), "done")

    first, second = llm.chat_requests()
    assert "FIRST:" in transcript(first)
    assert "FIRST" not in transcript(second)
    assert "SECOND: I started learning Portuguese." in transcript(second)
    assert cursor_of(topic_id) > read_to


def test_a_fact_with_the_same_value_as_an_existing_memory_is_not_written_again(api, owner, llm):
    existing = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "As you know, I live in Lisbon.")
    llm.chat_answers.append(answer(memory("home town", "lives in Lisbon.")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 1}
    assert list(Memory.objects.filter(user=owner)) == [existing]
    existing.refresh_from_db()
    assert existing.status == Status.ACTIVE


def test_a_near_duplicate_of_an_existing_memory_is_not_written_again(api, owner, llm):
    existing = make_memory(owner, key="editor", value="Prefers dark mode in the editor")
    topic_id = new_topic(api)
    post(api, topic_id, "Dark mode please, always, in every editor.")
    llm.chat_answers.append(answer(memory("editor", "The user prefers dark mode in their editor")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 1}
    assert list(Memory.objects.filter(user=owner)) == [existing]


def test_a_fact_repeated_in_one_answer_is_written_once(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Lisbon. Did I say I live in Lisbon?")
    llm.chat_answers.append(
        answer(memory("city", "Lives in Lisbon"), memory("home", "Lives in Lisbon"))
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 1}
    assert Memory.objects.filter(user=owner).count() == 1


def test_a_fact_extracted_again_later_is_not_written_twice(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Lisbon.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    accepted(extract(api, topic_id), "done")
    post(api, topic_id, "Lisbon is home, as I said.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 1}
    assert Memory.objects.filter(user=owner).count() == 1


def test_a_contradiction_is_proposed_as_a_pending_replacement(api, owner, llm):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "I moved from Lisbon to Porto last week.")
    llm.chat_answers.append(answer(memory("city", "Lives in Porto")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 1, "skipped": 0}
    replacement = Memory.objects.get(user=owner, value="Lives in Porto")
    assert replacement.status == Status.PENDING_REVIEW
    assert replacement.supersedes_id == old.id
    assert api.get(f"/api/memories/{replacement.id}").json()["supersedes_id"] == str(old.id)
    old.refresh_from_db()
    assert old.status == Status.ACTIVE
    assert old.deleted_at is None


def test_approving_the_replacement_archives_the_old_memory_with_revisions(api, owner, llm):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "I moved from Lisbon to Porto last week.")
    llm.chat_answers.append(answer(memory("city", "Lives in Porto")))
    accepted(extract(api, topic_id), "done")
    replacement = Memory.objects.get(user=owner, value="Lives in Porto")

    response = api.post(f"/api/memories/{replacement.id}/approve")

    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "active"
    old.refresh_from_db()
    assert old.status == Status.ARCHIVED
    assert old.deleted_at is None
    old_history = api.get(f"/api/memories/{old.id}/history").json()["data"]
    assert [r["action"] for r in old_history] == ["archive", "create"]
    assert old_history[0]["before"]["status"] == "active"
    assert old_history[0]["after"]["status"] == "archived"
    new_history = api.get(f"/api/memories/{replacement.id}/history").json()["data"]
    assert [r["action"] for r in new_history] == ["approve", "create"]
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


def test_a_candidate_in_another_scope_is_not_a_duplicate(api, owner, llm):
    topic_id = new_topic(api)
    make_memory(owner, key="city", value="Lives in Lisbon")
    post(api, topic_id, "In this chat, assume I live in Lisbon.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon", scope="session")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["created"] == 1
    assert Memory.objects.filter(user=owner, scope="session").count() == 1


def test_a_done_run_is_recorded(api, owner, llm):
    topic_id = new_topic(api)
    first = post(api, topic_id, "I moved to Lisbon last month.")
    last = post(api, topic_id, "Welcome!", role="assistant")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    accepted(extract(api, topic_id), "done")

    [run] = runs_of(topic_id)
    assert run.status == RunStatus.DONE
    assert run.extractor == "llm"
    assert run.attempts == 1
    assert (run.from_message_id, run.to_message_id) == (first["id"], last["id"])
    assert run.result() == {"created": 1, "merged": 0, "skipped": 0}
    assert cursor_of(topic_id) == last["id"]


def test_it_answers_404_for_another_users_topic(api, other_api, llm):
    topic_id = new_topic(other_api)
    post(other_api, topic_id, "I moved to Lisbon last month.")

    response = extract(api, topic_id)

    assert_error(response, 404, "topic_id")
    assert llm.chat_requests() == []
    assert not ExtractionRun.objects.exists()
    assert not Memory.objects.exists()


def test_it_answers_404_for_an_unknown_topic(api, llm):
    assert_error(extract(api, uuid.uuid4()), 404, "topic_id")


def test_it_answers_404_naming_topic_id_for_a_non_uuid(api, llm):
    body = assert_error(extract(api, "not-a-uuid"), 404, "topic_id")

    assert "not-a-uuid" in body["detail"]


def test_it_needs_authentication(anon_api, api, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")

    response = extract(anon_api, topic_id)

    assert response.status_code in (401, 403)
    assert llm.chat_requests() == []


def test_it_refuses_get(api, llm):
    topic_id = new_topic(api)

    response = api.get(f"/api/memories/extract/{topic_id}")

    assert_error(response, 405)


def test_without_an_embedder_a_repeated_fact_is_recognised_by_its_normalised_text(
    api, owner, llm, no_embedder
):
    existing = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "As you know, I live in Lisbon.")
    llm.chat_answers.append(answer(memory("home town", "lives in Lisbon.")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 1}
    assert list(Memory.objects.filter(user=owner)) == [existing]


def test_without_an_embedder_a_contradiction_is_still_proposed_as_a_replacement(
    api, owner, llm, no_embedder
):
    old = make_memory(owner, key="City", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Porto.")
    llm.chat_answers.append(answer(memory("city", "Lives in Porto")))

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 1, "skipped": 0}
    assert Memory.objects.get(user=owner, value="Lives in Porto").supersedes_id == old.id
