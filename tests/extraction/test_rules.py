"""The rule-based extractor, used when no utility model is configured (LLM_BASE_URL empty)."""

import pytest

from extraction.rules import extract_by_rules
from memories.models import Memory, Source, Status
from tests.extraction.helpers import accepted, extract, new_topic, post, runs_of

STATEMENTS = [
    ("Please remember that my sister's birthday is on May 3.", "sister's birthday", "My sister's"),
    ("I prefer tea over coffee in the morning.", "preferred drink", "Prefers tea over coffee"),
    ("Hi there, my name is Ana Silva.", "name", "Name is Ana Silva"),
]


@pytest.mark.parametrize(("text", "key", "value_start"), STATEMENTS)
def test_an_explicit_statement_becomes_a_pending_memory(
    api, owner, no_llm, fake_openai, text, key, value_start
):
    topic_id = new_topic(api)
    post(api, topic_id, text)

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 0}
    saved = Memory.objects.get(user=owner)
    assert saved.key == key
    assert saved.value.startswith(value_start), saved.value
    assert saved.status == Status.PENDING_REVIEW
    assert saved.source == Source.CONVERSATION
    assert saved.scope == "user"
    assert runs_of(topic_id)[0].extractor == "rules"
    assert fake_openai.chat_requests() == []


def test_all_three_statements_in_one_conversation_give_three_memories(api, owner, no_llm):
    topic_id = new_topic(api)
    for text, _, _ in STATEMENTS:
        post(api, topic_id, text)

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["created"] == 3
    assert set(Memory.objects.filter(user=owner).values_list("key", flat=True)) == {
        "sister's birthday",
        "preferred drink",
        "name",
    }
    assert set(Memory.objects.values_list("status", flat=True)) == {Status.PENDING_REVIEW}


def test_it_ignores_assistant_and_system_messages(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "What do you know about me?")
    post(api, topic_id, "Remember that the user loves opera. I prefer cats.", role="assistant")
    post(api, topic_id, "My name is Ada, remember that I am an assistant.", role="system")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 0}
    assert not Memory.objects.exists()


def test_plain_conversation_gives_no_memories(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "What is the weather like in Lisbon?")

    accepted(extract(api, topic_id), "done")

    assert not Memory.objects.exists()


def test_a_statement_made_twice_is_written_once(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I prefer tea over coffee.")
    accepted(extract(api, topic_id), "done")
    post(api, topic_id, "Like I said, I prefer tea over coffee.")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 1}
    assert Memory.objects.filter(user=owner).count() == 1


def test_a_new_name_is_proposed_as_a_replacement(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "My name is Ana.")
    accepted(extract(api, topic_id), "done")
    first = Memory.objects.get(user=owner)
    post(api, topic_id, "Actually my name is Beatriz.")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["merged"] == 1
    replacement = Memory.objects.get(user=owner, value="Name is Beatriz")
    assert replacement.supersedes_id == first.id


def test_remember_that_i_am_allergic_to_peanuts_gives_one_pending_memory(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "Remember that I am allergic to peanuts")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 0}
    [saved] = Memory.objects.filter(user=owner)
    assert (saved.key, saved.value, saved.status) == (
        "allergy to peanuts",
        "Allergic to peanuts",
        Status.PENDING_REVIEW,
    )


def test_a_name_and_a_city_in_one_sentence_are_two_exact_memories(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "My name is Dana and I live in Lisbon.")

    accepted(extract(api, topic_id), "done")

    listed = api.get("/api/memories", {"status": "pending_review"}).json()["data"]
    assert sorted((m["key"], m["value"]) for m in listed) == [
        ("home", "Lives in Lisbon"),
        ("name", "Name is Dana"),
    ]


def test_a_fact_stated_twice_in_one_run_is_proposed_once(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Porto.")
    post(api, topic_id, "As I told you, I live in Porto!")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 0}
    assert Memory.objects.filter(user=owner).count() == 1


def test_a_new_value_later_in_the_same_run_is_proposed_as_the_replacement(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Porto.")
    post(api, topic_id, "Sorry, I got that wrong: I live in Braga.")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 1, "skipped": 0}
    porto = Memory.objects.get(user=owner, value="Lives in Porto")
    braga = Memory.objects.get(user=owner, value="Lives in Braga")
    assert (porto.supersedes_id, braga.supersedes_id) == (None, porto.id)


def approve(api, memory: Memory) -> dict:
    response = api.post(f"/api/memories/{memory.id}/approve")
    assert response.status_code == 200, response.json()
    return response.json()


def test_approving_a_drink_preference_leaves_the_ui_theme_active(api, owner, no_llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I prefer dark mode.")
    accepted(extract(api, topic_id), "done")
    dark_mode = Memory.objects.get(user=owner)
    approve(api, dark_mode)
    post(api, topic_id, "I prefer green tea over coffee")

    body = accepted(extract(api, topic_id), "done")

    assert body["result"] == {"created": 1, "merged": 0, "skipped": 0}
    tea = Memory.objects.get(user=owner, key="preferred drink")
    assert (tea.value, tea.supersedes_id) == ("Prefers green tea over coffee", None)
    approve(api, tea)
    dark_mode.refresh_from_db()
    assert (dark_mode.key, dark_mode.status) == ("ui theme", Status.ACTIVE)
    assert api.get("/api/memories/count").json() == {"active": 2, "pending": 0}


def test_two_replacements_of_one_memory_leave_one_active_whichever_is_approved_last(
    api, owner, no_llm
):
    topic_id = new_topic(api)
    post(api, topic_id, "I live in Lisbon.")
    accepted(extract(api, topic_id), "done")
    lisbon = Memory.objects.get(user=owner)
    approve(api, lisbon)
    post(api, topic_id, "I moved to Porto.")
    accepted(extract(api, topic_id), "done")
    post(api, topic_id, "Correction: I moved to Braga.")
    accepted(extract(api, topic_id), "done")
    porto = Memory.objects.get(user=owner, value="Lives in Porto")
    braga = Memory.objects.get(user=owner, value="Lives in Braga")
    assert (porto.supersedes_id, braga.supersedes_id) == (lisbon.id, lisbon.id)

    approve(api, porto)
    body = approve(api, braga)

    assert body["supersedes_id"] == str(porto.id)
    active = Memory.objects.filter(user=owner, key="home", status=Status.ACTIVE)
    assert list(active.values_list("value", flat=True)) == ["Lives in Braga"]
    assert api.get("/api/memories/count").json() == {"active": 1, "pending": 0}


# --- extract_by_rules, directly ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("remember that the dentist is on Friday", "dentist", "The dentist is on Friday"),
        ("Remember: parking is on level 3.", "parking", "Parking is on level 3"),
        ("I prefer window seats", "preferred seat", "Prefers window seats"),
        ("I'd prefer short answers.", "answer style", "Prefers short answers"),
        ("my name is ana", "name", "Name is ana"),
        ("Just call me Bea.", "preferred name", "Wants to be called Bea"),
        ("I'm allergic to peanuts!", "allergy to peanuts", "Allergic to peanuts"),
        ("I live in Porto.", "home", "Lives in Porto"),
        ("I work as a nurse.", "job", "Works as a nurse"),
        ("I work at Acme.", "employer", "Works at Acme"),
    ],
)
def test_each_rule_catches_its_statement(text, key, value):
    [candidate] = extract_by_rules([text])

    assert (candidate.key, candidate.value, candidate.scope) == (key, value, "user")
    assert 0 <= candidate.importance <= 1
    assert 0 <= candidate.confidence <= 1


def test_the_rules_ignore_ordinary_sentences():
    assert extract_by_rules(["Can you summarise this article?", "I forgot my keys", ""]) == []
