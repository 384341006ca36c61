"""Schemathesis against a running server: generated requests, valid and invalid, for every
operation of the OpenAPI schema, each answer checked against it. Used by
tests/test_schema_conformance.py (bounded) and `python -m bench.schema_fuzz` (larger).

Driven through schemathesis' Python API (APIOperation.as_strategy plus Hypothesis) rather
than its pytest plugin, whose lazy-fixture loader does not run on pytest 9.2 (it sets
`Node._nodeid`, which pytest no longer has). The same checks, one report of every failure."""

import json
from collections import Counter
from dataclasses import dataclass, field

import hypothesis
import requests
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)


@schemathesis.serializer("application/x-ndjson")
def ndjson_body(ctx, value) -> bytes:
    """The import's body: the generated line object as one NDJSON line."""
    return (json.dumps(value) + "\n").encode()


@dataclass
class FuzzReport:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    # One line per distinct (operation, mode, failure title), with how to reproduce it.
    failures: dict[str, str] = field(default_factory=dict)
    # Operations and modes for which no data could be generated (not failures of the API).
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "requests": self.requests,
            "statuses": dict(sorted(self.statuses.items())),
            "failures": sorted(self.failures.values()),
            "skipped": self.skipped,
        }


def load_schema(base_url: str):
    config = schemathesis.Config.from_dict(
        # The caller's credentials are sent as a header of our own: no generated ones.
        {"generation": {"with-security-parameters": False}}
    )
    return schemathesis.openapi.from_url(f"{base_url}/api/schema/?format=json", config=config)


def fuzz(
    *,
    base_url: str,
    authorization: str,
    max_examples: int,
    exclude: frozenset[str] = frozenset(),
    report: FuzzReport | None = None,
) -> FuzzReport:
    """Up to `max_examples` valid and as many invalid requests per operation (except the
    operation ids in `exclude`), sent with `authorization`; derandomized and without
    shrinking, so a run is repeatable and bounded."""
    report = report or FuzzReport()
    schema = load_schema(base_url)
    headers = {"Authorization": authorization}
    settings = hypothesis.settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    with requests.Session() as http:
        for result in schema.get_all_operations():
            operation = result.ok()
            if operation.definition.raw.get("operationId") in exclude:
                continue
            for mode in MODES:
                _fuzz_operation(operation, mode, settings, http, base_url, headers, report)
    return report


def _fuzz_operation(operation, mode, settings, http, base_url, headers, report) -> None:
    @settings
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        report.requests += 1
        try:
            response = case.call_and_validate(
                base_url=base_url, session=http, headers=headers, checks=CHECKS, timeout=60
            )
        except FailureGroup as group:
            curl = case.as_curl_command(headers=headers)
            for failure in group.exceptions:
                key = f"{operation.label} [{mode.value}] {failure.title}"
                report.failures.setdefault(key, f"{key}: {failure.message[:400]}\n    {curl}")
            return
        report.statuses[str(response.status_code)] += 1

    try:
        run()
    except hypothesis.errors.HypothesisException as error:
        # Nothing to generate (e.g. no invalid value exists for an operation without inputs).
        report.skipped.append(f"{operation.label} [{mode.value}]: {type(error).__name__}")
