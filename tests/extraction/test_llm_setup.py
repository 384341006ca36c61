"""Setting up the utility model (docs/extraction.md, Setting up the model): the line a starting
process logs about the extractor that runs, `manage.py check_llm` against the fake provider,
an address where nothing listens and no configuration, and failures that name the address and
model they were sent to. Half a configuration: tests/config/test_llm_settings.py."""

import logging
import socket

import pytest
from celery.signals import worker_ready
from django.core.management import CommandError, call_command

from config.serving import prepare_serving_process
from extraction import llm as llm_client
from extraction.models import ExtractionRun, RunStatus
from tests.extraction.helpers import accepted, extract, new_topic, post
from tests.processes import run_python

SECRET_KEY = "sk-test-secret-never-logged"


def free_port() -> int:
    """A port nothing listens on: taken from the system, then let go."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def check_llm(**variables: str):
    """`manage.py check_llm` in a process of its own, with the real settings and only these
    LLM_* variables."""
    return run_python(
        ["manage.py", "check_llm"],
        drop=("DJANGO_SETTINGS_MODULE",),
        drop_prefixes=("LLM_",),
        SECRET_KEY="test-only-secret-key",
        EMBEDDER="none",
        **variables,
    )


# --- The start-up line -------------------------------------------------------------------------


def start_serving() -> None:
    """What a gunicorn worker, runserver and the MCP server run before they answer."""
    prepare_serving_process()


def start_celery_worker() -> None:
    """What a Celery worker sends once it consumes its queues."""
    worker_ready.send(sender=None)


STARTS = {"serving process": start_serving, "celery worker": start_celery_worker}


def extraction_lines(caplog) -> list[str]:
    """The start-up lines logged (at INFO, so a production log shows them)."""
    lines = [r for r in caplog.records if r.getMessage().startswith("extraction: ")]
    assert all(r.levelname == "INFO" for r in lines)
    return [r.getMessage() for r in lines]


@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_a_starting_process_names_the_llm_it_extracts_with_and_not_its_key(
    llm, settings, no_embedder, caplog, start
):
    settings.LLM_API_KEY = SECRET_KEY
    caplog.set_level(logging.INFO)

    start()

    assert extraction_lines(caplog) == [f"extraction: the LLM fake-model at {llm.base_url}"]
    assert SECRET_KEY not in caplog.text
    assert llm.requests == []  # saying which model runs asks it nothing


@pytest.mark.parametrize("start", STARTS.values(), ids=STARTS.keys())
def test_a_starting_process_without_a_model_says_the_rule_extractor_runs(
    no_llm, no_embedder, caplog, start
):
    caplog.set_level(logging.INFO)

    start()

    assert extraction_lines(caplog) == [
        "extraction: the rule extractor (no LLM_BASE_URL and LLM_MODEL set)"
    ]


def test_the_start_up_line_leaves_out_a_password_in_the_address(llm, settings, caplog):
    host = llm.base_url.removeprefix("http://")
    settings.LLM_BASE_URL = f"http://proxy-user:proxy-secret@{host}"
    caplog.set_level(logging.INFO)

    llm_client.extractor_log()

    assert extraction_lines(caplog) == [f"extraction: the LLM fake-model at {llm.base_url}"]


# --- manage.py check_llm ---------------------------------------------------------------------


def test_check_llm_prints_the_models_answer_and_exits_0(fake_openai):
    fake_openai.chat_answers.append("Ready")

    done = check_llm(
        LLM_BASE_URL=fake_openai.base_url, LLM_MODEL="fake-model", LLM_API_KEY=SECRET_KEY
    )

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"address  {fake_openai.base_url}",
        "model    fake-model",
        "answer   Ready",
    ]
    assert lines[3].startswith("time     ") and lines[3].endswith(" s")
    assert SECRET_KEY not in done.stdout + done.stderr
    [request] = fake_openai.chat_requests()
    assert request["model"] == "fake-model"
    assert request["messages"] == llm_client.CHECK_MESSAGES


def test_check_llm_without_a_local_servers_key_asks_all_the_same(fake_openai):
    fake_openai.chat_answers.append("Ready")

    done = check_llm(LLM_BASE_URL=fake_openai.base_url, LLM_MODEL="llama3.1")

    assert done.returncode == 0, done.stderr
    assert "answer   Ready" in done.stdout
    assert [r["model"] for r in fake_openai.chat_requests()] == ["llama3.1"]


def test_check_llm_names_the_address_and_model_when_nothing_listens():
    address = f"http://127.0.0.1:{free_port()}/v1"

    done = check_llm(LLM_BASE_URL=address, LLM_MODEL="gpt-4o-mini", LLM_API_KEY=SECRET_KEY)

    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"CommandError: could not connect to {address} (model gpt-4o-mini): "
        "APIConnectionError: Connection error."
    )
    assert done.stdout.splitlines() == [f"address  {address}", "model    gpt-4o-mini"]
    assert SECRET_KEY not in done.stdout + done.stderr


def test_check_llm_without_a_model_says_the_rule_extractor_runs_and_exits_1():
    done = check_llm()

    assert done.returncode == 1
    assert done.stderr.strip() == (
        "CommandError: No LLM is configured: LLM_BASE_URL and LLM_MODEL are not set, so "
        "extraction uses the rule extractor. Set both to use a model (docs/extraction.md, "
        "Setting up the model)."
    )
    assert done.stdout == ""


def test_check_llm_reports_the_error_the_model_answers_without_retrying(llm, settings):
    settings.EXTRACTION_LLM_ATTEMPTS = 3
    llm.chat_answers.extend([("status", 404), "Ready"])

    with pytest.raises(CommandError) as failed:
        call_command("check_llm")

    assert str(failed.value).startswith(
        f"{llm.base_url} (model fake-model) answered HTTP 404: NotFoundError: "
    )
    assert len(llm.chat_requests()) == 1


def test_the_check_without_a_model_asks_no_provider(no_llm, settings):
    # The SDK's default address is OpenAI's: an unconfigured check must not end up there.
    settings.LLM_API_KEY = SECRET_KEY

    with pytest.raises(llm_client.ExtractionFailed) as failed:
        llm_client.check()

    assert failed.value.reason == "no LLM is configured (LLM_BASE_URL and LLM_MODEL)"
    assert failed.value.attempts == 0


# --- Failures name where they were sent ----------------------------------------------------------


def test_a_connection_failure_names_the_address_and_model(llm, settings):
    address = f"http://127.0.0.1:{free_port()}/v1"
    settings.LLM_BASE_URL = address
    settings.LLM_MODEL = "gpt-4o-mini"
    settings.EXTRACTION_LLM_ATTEMPTS = 2

    with pytest.raises(llm_client.ExtractionFailed) as failed:
        llm_client.complete_json([{"role": "user", "content": "hello"}])

    assert failed.value.reason == (
        f"could not connect to {address} (model gpt-4o-mini): APIConnectionError: Connection error."
    )
    assert failed.value.attempts == 2


def test_a_timeout_names_the_address_the_model_and_the_time_waited(llm, settings):
    settings.LLM_TIMEOUT_SECONDS = 0.3
    settings.EXTRACTION_LLM_ATTEMPTS = 1
    llm.chat_answers.append(("sleep", 1.0))

    with pytest.raises(llm_client.ExtractionFailed) as failed:
        llm_client.complete_json([{"role": "user", "content": "hello"}])

    assert failed.value.reason == (
        f"no answer in 0.3 s from {llm.base_url} (model fake-model): "
        "APITimeoutError: Request timed out."
    )


@pytest.mark.parametrize("status", [401, 503])
def test_an_http_error_names_the_address_the_model_and_the_status(llm, settings, status):
    settings.EXTRACTION_LLM_ATTEMPTS = 1
    llm.chat_answers.append(("status", status))

    with pytest.raises(llm_client.ExtractionFailed) as failed:
        llm_client.complete_json([{"role": "user", "content": "hello"}])

    assert failed.value.reason.startswith(
        f"{llm.base_url} (model fake-model) answered HTTP {status}: "
    )
    assert len(failed.value.reason) <= 300


def test_a_failed_run_records_where_the_model_was_not_found(api, owner, llm, settings):
    """The reason a run stores, and the API and the review pages show."""
    address = f"http://127.0.0.1:{free_port()}/v1"
    settings.LLM_BASE_URL = address
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")

    body = accepted(extract(api, topic_id), "failed")

    expected = f"could not connect to {address} (model fake-model): "
    assert body["error"].startswith(expected)
    run = ExtractionRun.objects.get()
    assert run.status == RunStatus.FAILED and run.reason.startswith(expected)
