"""The two switches: the global config key memory_extraction_enabled and a persona's
memory_enabled. Either one off means no extraction, no model call, nothing queued."""

import pytest

from extraction.models import RunStatus
from extraction.triggers import scan_extractions
from memories.models import ConfigEntry, Memory
from tests.extraction.helpers import (
    accepted,
    answer,
    extract,
    extract_work,
    memory,
    new_project,
    new_topic,
    new_work_session,
    post,
    post_work,
    runs_of,
)


def set_global_switch(enabled: bool) -> None:
    ConfigEntry.objects.update_or_create(
        key="memory_extraction_enabled", defaults={"value": enabled}
    )


def busy_topic(api, **fields) -> str:
    topic_id = new_topic(api, **fields)
    for n in range(8):
        post(api, topic_id, f"I live in Lisbon, message {n}.")
    return topic_id


def new_persona(staff_api, *, memory_enabled: bool) -> str:
    response = staff_api.post(
        "/api/personas", {"name": "Ada", "memory_enabled": memory_enabled}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert response.json()["memory_enabled"] is memory_enabled
    return response.json()["id"]


@pytest.fixture
def extraction_off(db):
    set_global_switch(False)


# --- the global switch -------------------------------------------------------------------------


def test_the_global_switch_off_skips_a_direct_extraction(api, owner, llm, extraction_off):
    topic_id = busy_topic(api)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    body = accepted(extract(api, topic_id), "skipped")

    assert "memory_extraction_enabled" in body["reason"]
    assert llm.chat_requests() == []
    assert not Memory.objects.exists()
    assert [run.status for run in runs_of(topic_id)] == [RunStatus.SKIPPED]


def test_the_global_switch_off_skips_a_work_session(api, owner, llm, extraction_off):
    session_id = new_work_session(api, new_project(api))
    for n in range(10):
        post_work(api, session_id, f"Step {n}")

    accepted(extract_work(api, session_id), "skipped")

    assert llm.chat_requests() == []


def test_the_global_switch_off_makes_the_scanner_queue_nothing(
    api, owner, llm, extraction_off, django_capture_on_commit_callbacks
):
    topic_id = busy_topic(api)

    with django_capture_on_commit_callbacks(execute=True) as queued_tasks:
        queued = scan_extractions()

    assert queued == {"topics": 0, "work_sessions": 0}
    assert queued_tasks == []
    assert llm.chat_requests() == []
    assert runs_of(topic_id) == []


def test_the_global_switch_off_stops_the_automatic_path(
    api, owner, llm, extraction_off, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api)

    for n in range(8):
        with django_capture_on_commit_callbacks(execute=True):
            post(api, topic_id, f"Message {n}")

    assert llm.chat_requests() == []
    assert runs_of(topic_id) == []


def test_switching_it_back_on_extracts_what_was_left(api, owner, llm, extraction_off):
    topic_id = busy_topic(api)
    accepted(extract(api, topic_id), "skipped")
    set_global_switch(True)
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))

    accepted(extract(api, topic_id), "done")

    assert "message 0" in llm.chat_requests()[0]["messages"][-1]["content"]
    assert Memory.objects.filter(user=owner).count() == 1


def test_without_a_config_entry_extraction_is_on(api, owner, llm):
    ConfigEntry.objects.filter(key="memory_extraction_enabled").delete()
    topic_id = busy_topic(api)

    accepted(extract(api, topic_id), "done")

    assert len(llm.chat_requests()) == 1


# --- a persona's switch ------------------------------------------------------------------------


def test_a_persona_without_memory_skips_a_direct_extraction(api, staff_api, owner, llm):
    persona_id = new_persona(staff_api, memory_enabled=False)
    topic_id = busy_topic(api, persona_id=persona_id)

    body = accepted(extract(api, topic_id), "skipped")

    assert "memory_enabled" in body["reason"]
    assert llm.chat_requests() == []
    assert not Memory.objects.exists()


def test_a_persona_without_memory_is_left_out_by_the_scanner(
    api, staff_api, owner, llm, django_capture_on_commit_callbacks
):
    off_topic = busy_topic(api, persona_id=new_persona(staff_api, memory_enabled=False))
    on_topic = busy_topic(api, persona_id=new_persona(staff_api, memory_enabled=True))

    with django_capture_on_commit_callbacks(execute=True):
        queued = scan_extractions()

    assert queued == {"topics": 1, "work_sessions": 0}
    assert runs_of(off_topic) == []
    assert [run.status for run in runs_of(on_topic)] == [RunStatus.DONE]
    assert len(llm.chat_requests()) == 1


def test_a_persona_without_memory_stops_the_automatic_path(
    api, staff_api, owner, llm, django_capture_on_commit_callbacks
):
    topic_id = new_topic(api, persona_id=new_persona(staff_api, memory_enabled=False))

    for n in range(8):
        with django_capture_on_commit_callbacks(execute=True):
            post(api, topic_id, f"Message {n}")

    assert llm.chat_requests() == []
    assert runs_of(topic_id) == []


def test_switching_a_persona_off_later_stops_its_extraction(api, staff_api, owner, llm):
    persona_id = new_persona(staff_api, memory_enabled=True)
    topic_id = busy_topic(api, persona_id=persona_id)
    response = staff_api.patch(
        f"/api/personas/{persona_id}", {"memory_enabled": False}, format="json"
    )
    assert response.status_code == 200, response.json()

    accepted(extract(api, topic_id), "skipped")

    assert llm.chat_requests() == []
