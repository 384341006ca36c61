"""POST /api/memories/extract/{topic_id}: the candidates of one run are compared with each
other as with the stored memories, so a run proposes each fact once."""

from memories.models import Memory, Status
from tests.extraction.helpers import accepted, answer, extract, memory, new_topic, post
from tests.memories.helpers import make_memory


def test_a_near_duplicate_under_another_key_in_one_answer_is_written_once(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "Remember that I am allergic to peanuts")
    llm.chat_answers.append(
        answer(
            memory("allergy", "Allergic to peanuts"), memory("allergies", "Is allergic to peanuts")
        )
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 1}
    [saved] = Memory.objects.filter(user=owner)
    assert (saved.key, saved.value, saved.status) == (
        "allergy",
        "Allergic to peanuts",
        Status.PENDING_REVIEW,
    )


def test_the_same_value_under_another_key_in_one_answer_is_written_once(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Lisbon. Did I say I live in Lisbon?")
    llm.chat_answers.append(
        answer(memory("city", "Lives in Lisbon"), memory("home", "lives in Lisbon."))
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 1}
    assert list(Memory.objects.filter(user=owner).values_list("key", flat=True)) == ["city"]


def test_a_second_value_for_a_key_in_one_answer_replaces_the_first(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I lived in Porto until March; now I live in Braga.")
    llm.chat_answers.append(
        answer(memory("city", "Lives in Porto"), memory("city", "Lives in Braga"))
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 1, "skipped": 0}
    porto = Memory.objects.get(user=owner, value="Lives in Porto")
    braga = Memory.objects.get(user=owner, value="Lives in Braga")
    assert (porto.supersedes_id, braga.supersedes_id) == (None, porto.id)
    assert api.get(f"/api/memories/{braga.id}").json()["supersedes_id"] == str(porto.id)


def test_a_fact_in_one_answer_is_compared_with_stored_memories_and_earlier_candidates(
    api, owner, llm
):
    old = make_memory(owner, key="city", value="Lives in Lisbon")
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Porto. Yes, Porto, I live in Porto now.")
    llm.chat_answers.append(
        answer(memory("city", "Lives in Porto"), memory("home city", "Lives in Porto"))
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 1, "skipped": 1}
    assert Memory.objects.get(user=owner, value="Lives in Porto").supersedes_id == old.id


def test_candidates_in_two_scopes_are_not_duplicates_of_each_other(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Lisbon; for this chat, assume Lisbon too.")
    llm.chat_answers.append(
        answer(
            memory("city", "Lives in Lisbon"), memory("city", "Lives in Lisbon", scope="session")
        )
    )

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 2, "merged": 0, "skipped": 0}
    assert sorted(Memory.objects.filter(user=owner).values_list("scope", flat=True)) == [
        "session",
        "user",
    ]
