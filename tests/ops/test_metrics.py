"""GET /metrics: Prometheus text for the callers METRICS_TOKEN and METRICS_ALLOWED_NETWORKS
let in; closed when neither is set. The figures move with the requests, extractions and tasks
between two scrapes."""

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from prometheus_client.parser import text_string_to_metric_families

from extraction.tasks import extract_topic_task
from ops.metrics import RECALL_STAGES, observe_recall_stage
from tests.extraction.helpers import accepted, answer, extract, memory, new_topic, post
from tests.memories.helpers import assert_error, make_memory, make_pending
from tests.ops.conftest import METRICS_TOKEN, Samples

REPO = Path(__file__).resolve().parents[2]


def test_metrics_are_closed_when_neither_a_token_nor_networks_are_set(anon_api, db, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = []

    body = assert_error(anon_api.get("/metrics"), 403)

    assert body["code"] == "metrics_closed"
    assert "METRICS_TOKEN" in body["detail"]


def test_metrics_ask_for_the_token(anon_api, db, settings):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []

    for authorization in ("", "Bearer wrong", f"Token {METRICS_TOKEN}", METRICS_TOKEN):
        response = anon_api.get("/metrics", HTTP_AUTHORIZATION=authorization)
        assert assert_error(response, 401)["code"] == "not_authenticated"
        assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'

    response = anon_api.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
    assert response.status_code == 200


def test_metrics_answer_only_addresses_in_the_allowed_networks(anon_api, db, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8", "192.168.1.7"]

    response = anon_api.get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert assert_error(response, 403)["code"] == "permission_denied"
    assert anon_api.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert anon_api.get("/metrics", REMOTE_ADDR="192.168.1.7").status_code == 200
    assert anon_api.get("/metrics", REMOTE_ADDR="::ffff:10.1.2.3").status_code == 200


def test_metrics_take_the_client_address_from_the_trusted_proxy(anon_api, db, settings):
    settings.METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    settings.TRUSTED_PROXY_COUNT = 1
    forwarded = {"REMOTE_ADDR": "127.0.0.1"}

    assert anon_api.get("/metrics", HTTP_X_FORWARDED_FOR="10.0.0.9", **forwarded).status_code == 200
    response = anon_api.get("/metrics", HTTP_X_FORWARDED_FOR="10.0.0.9, 8.8.8.8", **forwarded)
    assert response.status_code == 403


def test_metrics_need_the_network_and_the_token_when_both_are_set(anon_api, db, settings):
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    bearer = f"Bearer {METRICS_TOKEN}"

    assert anon_api.get("/metrics").status_code == 401
    assert (
        anon_api.get("/metrics", HTTP_AUTHORIZATION=bearer, REMOTE_ADDR="10.0.0.1").status_code
        == 403
    )
    assert anon_api.get("/metrics", HTTP_AUTHORIZATION=bearer).status_code == 200


def test_request_counts_and_latencies_move_by_url_pattern(api, owner, scrape, no_embedder):
    memory_id = make_memory(owner).id
    before = scrape()

    assert api.get("/api/memories").status_code == 200
    assert api.get("/api/memories").status_code == 200
    assert api.get(f"/api/memories/{memory_id}").status_code == 200
    assert api.get(f"/api/memories/{uuid.uuid4()}").status_code == 404
    assert api.get("/api/no-such-path").status_code == 404

    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return after(name, **labels) - before(name, **labels)

    listing = {"route": "/api/memories", "method": "GET"}
    assert moved("memory_http_requests_total", status="200", **listing) == 2
    assert moved("memory_http_request_duration_seconds_count", **listing) == 2
    assert moved("memory_http_request_duration_seconds_sum", **listing) > 0
    # Labelled by the pattern, never the path: one series for every memory id.
    detail = {"route": "/api/memories/{pk}", "method": "GET"}
    assert moved("memory_http_requests_total", status="200", **detail) == 1
    assert moved("memory_http_requests_total", status="404", **detail) == 1
    unmatched = {"route": "<unmatched>", "method": "GET", "status": "404"}
    assert moved("memory_http_requests_total", **unmatched) == 1
    assert str(memory_id) not in after.text
    # The first scrape counts too, once it has answered.
    metrics = {"route": "/metrics", "method": "GET", "status": "200"}
    assert moved("memory_http_requests_total", **metrics) == 1


def test_the_pending_review_gauge_is_counted_at_each_scrape(owner, scrape, no_embedder):
    make_memory(owner)  # active: not counted
    assert scrape()("memory_pending_review") == 0

    make_pending(owner)
    make_pending(owner, key="diet", value="Is vegetarian")

    assert scrape()("memory_pending_review") == 2


def test_extraction_runs_model_calls_and_task_outcomes_are_counted(api, llm, scrape):
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(answer(memory("city", "Lives in Lisbon")))
    before = scrape()

    accepted(extract(api, topic_id), "done")

    after = scrape()

    def moved(name: str, **labels: str) -> float:
        return after(name, **labels) - before(name, **labels)

    for status in ("queued", "running", "done"):
        assert moved("memory_extraction_runs_total", status=status) == 1, status
    assert moved("memory_extraction_runs_total", status="failed") == 0
    assert moved("memory_extraction_model_request_duration_seconds_count", outcome="ok") == 1
    task = "extraction.tasks.extract_topic_task"
    assert moved("memory_celery_tasks_total", task=task, outcome="success") == 1
    assert moved("memory_pending_review") == 1


def test_a_failed_extraction_counts_the_run_and_the_model_error(api, llm, scrape, settings):
    settings.EXTRACTION_LLM_ATTEMPTS = 1
    topic_id = new_topic(api)
    post(api, topic_id, "I moved to Lisbon last month.")
    llm.chat_answers.append(("status", 500))
    before = scrape()

    accepted(extract(api, topic_id), "failed")

    after = scrape()
    assert (
        after("memory_extraction_runs_total", status="failed")
        - before("memory_extraction_runs_total", status="failed")
        == 1
    )
    errors = "memory_extraction_model_request_duration_seconds_count"
    assert (
        after(errors, outcome="InternalServerError") - before(errors, outcome="InternalServerError")
        == 1
    )


def test_a_task_that_raises_counts_as_a_failure(db, scrape):
    task = "extraction.tasks.extract_topic_task"
    before = scrape()("memory_celery_tasks_total", task=task, outcome="failure")

    with pytest.raises(ValidationError):  # not an id at all
        extract_topic_task.delay("not-a-conversation-id")

    after = scrape()("memory_celery_tasks_total", task=task, outcome="failure")
    assert after - before == 1


def test_recall_stages_are_shown_from_the_start_and_move_when_observed(db, scrape):
    before = scrape()
    for stage in RECALL_STAGES:
        assert ("memory_recall_stage_duration_seconds_count", frozenset({("stage", stage)})) in (
            before.values
        )

    observe_recall_stage("candidates", 0.004)

    after = scrape()
    name = "memory_recall_stage_duration_seconds"
    assert (
        after(f"{name}_count", stage="candidates") - before(f"{name}_count", stage="candidates")
        == 1
    )
    assert (
        after(f"{name}_bucket", stage="candidates", le="0.005")
        - before(f"{name}_bucket", stage="candidates", le="0.005")
        == 1
    )
    with pytest.raises(ValueError, match="unknown recall stage"):
        observe_recall_stage("reranking", 0.1)


def test_processes_sharing_the_multiprocess_directory_are_added_up(tmp_path):
    """gunicorn workers and Celery workers each write their own figures; the process that
    answers /metrics adds up every process's (PROMETHEUS_MULTIPROC_DIR)."""
    environment = {
        **{key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_SETTINGS_MODULE": "config.settings_test",
        "PROMETHEUS_MULTIPROC_DIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
    }

    def run(code: str) -> str:
        return subprocess.run(
            [sys.executable, "-c", f"from ops import metrics; {code}"],
            cwd=REPO,
            env=environment,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout

    for _ in range(2):  # two worker processes, one task each
        run("metrics.count_task(task='t', outcome='success')")
    text = run("import sys; sys.stdout.write(metrics.exposition().decode())")

    samples = Samples(text)
    assert samples("memory_celery_tasks_total", task="t", outcome="success") == 2
    assert list(text_string_to_metric_families(text))


def test_a_malformed_allowed_network_stops_start_up():
    environment = {
        **{key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"},
        "SECRET_KEY": "x",
        "METRICS_ALLOWED_NETWORKS": "10.0.0.0/8,10.0.0.0/33",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert (
        "METRICS_ALLOWED_NETWORKS='10.0.0.0/8,10.0.0.0/33': expected IP networks or addresses"
        in result.stderr
    ), result.stderr


def test_a_search_times_each_stage_of_its_recall(api, owner, scrape):
    make_memory(owner, key="pet", value="I have a golden retriever named Max")
    name = "memory_recall_stage_duration_seconds_count"
    before = scrape()

    response = api.get("/api/memories/search", {"q": "what dog do I have"})
    filtered = api.get(
        "/api/memories/search", {"q": "what dog do I have", "filter": '{"key": "pet"}'}
    )

    assert response.status_code == 200 and response.json()["data"]
    assert filtered.status_code == 200 and filtered.json()["data"]
    after = scrape()
    for stage in RECALL_STAGES:
        # Both searches go through every stage; only the filtered one finds a filter's ids.
        expected = 1 if stage == "filter" else 2
        assert after(name, stage=stage) - before(name, stage=stage) == expected, stage
