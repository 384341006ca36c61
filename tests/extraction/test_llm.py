"""The utility model through the real OpenAI client and the fake provider: retries, failures
recorded as failed runs, and answers wrapped in prose, code fences or reasoning blocks."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from extraction import llm as llm_client
from extraction.models import ExtractionRun, RunStatus
from memories.models import Memory, MemoryRevision
from tests.extraction.helpers import (
    accepted,
    answer,
    cursor_of,
    extract,
    memory,
    new_topic,
    post,
    runs_of,
    transcript,
)

GOOD = answer(memory("city", "Lives in Lisbon"))
GOOD_TEXT = json.dumps(GOOD)

FAILURES = {
    "garbage": "I'm sorry, I can't produce JSON today.",
    "truncated JSON": '{"memories": [{"key": "city", "value": "Lives in',
    "JSON of the wrong shape": {"facts": ["Lives in Lisbon"]},
    "a memory without a value": {"memories": [{"key": "city"}]},
    "an unknown scope": answer(memory("city", "Lives in Lisbon", scope="galaxy")),
    "429": ("status", 429),
    "500": ("status", 500),
}


@pytest.mark.parametrize("failure", FAILURES.values(), ids=FAILURES.keys())
def test_a_failure_on_every_attempt_writes_nothing_and_answers_failed(
    api, owner, llm, settings, failure
):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([failure] * settings.EXTRACTION_LLM_ATTEMPTS)

    body = accepted(extract(api, topic_id), "failed")

    assert body["result"] == {"created": 0, "merged": 0, "skipped": 0}
    # A failure's message is `error`, as in the run object; `reason` is for skips.
    assert body["error"] and body["reason"] is None
    assert len(llm.chat_requests()) == settings.EXTRACTION_LLM_ATTEMPTS
    assert not Memory.objects.exists()
    assert not MemoryRevision.objects.exists()
    assert cursor_of(topic_id) == 0
    [run] = runs_of(topic_id)
    assert run.status == RunStatus.FAILED
    assert run.attempts == settings.EXTRACTION_LLM_ATTEMPTS
    assert run.reason


def test_a_timeout_on_every_attempt_writes_nothing_and_answers_failed(api, owner, llm, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.5
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([("sleep", 1.5)] * settings.EXTRACTION_LLM_ATTEMPTS)

    body = accepted(extract(api, topic_id), "failed")

    assert "Timeout" in body["error"]
    assert len(llm.chat_requests()) == settings.EXTRACTION_LLM_ATTEMPTS
    assert not Memory.objects.exists()
    assert cursor_of(topic_id) == 0
    assert [run.status for run in runs_of(topic_id)] == [RunStatus.FAILED]


def test_the_messages_of_a_failed_run_are_read_again_next_time(api, owner, llm, settings):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([("status", 500)] * settings.EXTRACTION_LLM_ATTEMPTS)
    accepted(extract(api, topic_id), "failed")
    llm.chat_answers.append(GOOD)

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["created"] == 1
    assert "I moved to Lisbon last month." in transcript(llm.chat_requests()[-1])
    assert Memory.objects.get(user=owner).value == "Lives in Lisbon"
    assert [run.status for run in runs_of(topic_id)] == [RunStatus.FAILED, RunStatus.DONE]
    assert cursor_of(topic_id) > 0


@pytest.mark.parametrize("failure", [("status", 429), ("status", 500), "no JSON here"])
def test_a_failure_followed_by_a_good_answer_succeeds(api, owner, llm, failure):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([failure, GOOD])

    body = accepted(extract(api, topic_id), "done")

    assert body["result"]["created"] == 1
    assert len(llm.chat_requests()) == 2
    assert Memory.objects.filter(user=owner, value="Lives in Lisbon").count() == 1
    [run] = runs_of(topic_id)
    assert run.attempts == 2


def test_a_timeout_followed_by_a_good_answer_succeeds(api, owner, llm, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.5
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([("sleep", 1.5), GOOD])

    accepted(extract(api, topic_id), "done")

    assert Memory.objects.filter(user=owner).count() == 1


def test_a_client_error_is_not_retried(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.extend([("status", 400), GOOD])

    body = accepted(extract(api, topic_id), "failed")

    assert "400" in body["error"] or "BadRequest" in body["error"]
    assert len(llm.chat_requests()) == 1
    assert not Memory.objects.exists()
    assert cursor_of(topic_id) == 0


def test_an_unreachable_provider_is_a_failed_run(api, owner, llm, settings):
    llm.stop()
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")

    accepted(extract(api, topic_id), "failed")

    assert not Memory.objects.exists()
    assert ExtractionRun.objects.get().status == RunStatus.FAILED


WRAPPED = {
    "prose around it": f"Sure! Here is what I found:\n{GOOD_TEXT}\nLet me know if you need more.",
    "a code fence": f"```json\n{GOOD_TEXT}\n```",
    "a think block": (
        '<think>The user said {"memories": []} is wrong? They live in Lisbon, so '
        "I'll answer with one memory.</think>\n" + GOOD_TEXT
    ),
    "a think block and a fence": f"<think>\nreasoning {{ not json\n</think>\n```\n{GOOD_TEXT}\n```",
}


@pytest.mark.parametrize("content", WRAPPED.values(), ids=WRAPPED.keys())
def test_it_reads_json_wrapped_in(api, owner, llm, content):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(content)

    accepted(extract(api, topic_id), "done")

    assert Memory.objects.get(user=owner).value == "Lives in Lisbon"
    assert len(llm.chat_requests()) == 1


def test_complete_json_sends_the_configured_model_and_key(llm):
    llm.chat_answers.append(GOOD)

    payload, attempts = llm_client.complete_json([{"role": "user", "content": "hello"}])

    assert payload == GOOD
    assert attempts == 1
    [request] = llm.chat_requests()
    assert request["model"] == "fake-model"
    assert request["messages"] == [{"role": "user", "content": "hello"}]


def test_complete_json_raises_extraction_failed_after_the_last_attempt(llm, settings):
    llm.chat_answers.extend([("status", 503)] * settings.EXTRACTION_LLM_ATTEMPTS)

    with pytest.raises(llm_client.ExtractionFailed) as failed:
        llm_client.complete_json([{"role": "user", "content": "hello"}])

    assert failed.value.attempts == settings.EXTRACTION_LLM_ATTEMPTS
    assert len(llm.chat_requests()) == settings.EXTRACTION_LLM_ATTEMPTS


def test_a_process_that_serves_the_api_does_not_import_the_model_sdk_until_it_calls_it():
    """The extraction tasks are registered in every process (the app's ready()), and they
    reach this module: the openai SDK (~20 MB a process) must wait for the first call."""
    script = (
        "import sys, django; django.setup();"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "import extraction.tasks;"
        "print('openai' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parents[2],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SECRET_KEY": "x",
            "EMBEDDER": "local",
            "DATABASE_URL": "sqlite:////tmp/never-opened.sqlite3",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
