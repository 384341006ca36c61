import io
import json
import logging

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ops.logs import JsonFormatter, RequestContextFilter

METRICS_TOKEN = "test-metrics-token"


@pytest.fixture
def llm(settings, openai_embedder):
    """The utility model and the embeddings, both from the fake provider on 127.0.0.1."""
    settings.LLM_BASE_URL = openai_embedder.base_url
    settings.LLM_MODEL = "fake-model"
    settings.LLM_API_KEY = "k"
    settings.LLM_TIMEOUT_SECONDS = 5.0
    settings.EXTRACTION_LLM_BACKOFF_SECONDS = 0.01
    return openai_embedder


@pytest.fixture
def scrape(settings, anon_api):
    """GET /metrics with the token, parsed: scrape()[name, {label: value}] is the sample's
    value, 0 when absent."""
    settings.METRICS_TOKEN = METRICS_TOKEN
    settings.METRICS_ALLOWED_NETWORKS = []

    def scrape_once() -> "Samples":
        response = anon_api.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {METRICS_TOKEN}")
        assert response.status_code == 200, response.content[:500]
        assert response["Content-Type"].startswith("text/plain"), response["Content-Type"]
        return Samples(response.content.decode())

    return scrape_once


class Samples:
    def __init__(self, text: str) -> None:
        self.text = text
        self.values = {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    def __call__(self, name: str, **labels: str) -> float:
        return self.values.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def log_lines():
    """What the configured log handler writes during the test, as parsed JSON lines (the
    handler's filter and the JSON format of LOG_FORMAT=json, whatever LOG_FORMAT says)."""
    handler = next(
        handler
        for handler in logging.getLogger().handlers
        if any(isinstance(f, RequestContextFilter) for f in handler.filters)
    )
    buffer = io.StringIO()
    previous_stream = handler.setStream(buffer)
    previous_formatter = handler.formatter
    handler.setFormatter(JsonFormatter())

    def lines() -> list[dict]:
        return [json.loads(line) for line in buffer.getvalue().splitlines() if line.strip()]

    lines.text = buffer.getvalue  # the raw output
    yield lines
    handler.setStream(previous_stream)
    handler.setFormatter(previous_formatter)
