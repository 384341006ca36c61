"""Schemathesis against a running server: generated requests, valid and invalid, for every
operation of the OpenAPI schema, each answer checked against it, and schemathesis' stateful
run (fuzz_stateful). Used by tests/test_schema_conformance.py (bounded), tests/test_fuzz.py
(10,000+ requests in CI's PostgreSQL pass) and `python -m bench.schema_fuzz` (larger).

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
    # Operations and modes for which no data could be generated, and stateful suites that
    # ended early (not failures of the API).
    skipped: list[str] = field(default_factory=list)
    # Scenarios (sequences of calls) a stateful run started, Hypothesis' replays included.
    scenarios: int = 0

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
    extra_headers: dict[str, str] | None = None,
) -> FuzzReport:
    """Up to `max_examples` valid and as many invalid requests per operation (except the
    operation ids in `exclude`), sent with `authorization` (and `extra_headers`, such as an
    API key's X-User-Id); derandomized and without shrinking, so a run is repeatable and
    bounded."""
    report = report or FuzzReport()
    schema = load_schema(base_url)
    headers = {"Authorization": authorization, **(extra_headers or {})}
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


def fuzz_stateful(
    *,
    base_url: str,
    headers: dict[str, str],
    scenarios: int,
    steps: int,
    report: FuzzReport | None = None,
) -> FuzzReport:
    """Schemathesis' stateful run: `scenarios` sequences of up to `steps` calls each, chained
    by the links it infers from the schema (a created memory's id into GET, PATCH, DELETE,
    restore, history ...), mostly valid data with some invalid, sent with `headers`. Every
    answer is checked as fuzz() checks it; a failure is recorded and the scenario goes on.

    Seeded (0, 1, 2 ...), but not exactly repeatable: the server's state decides what the
    links carry. When Hypothesis finds that a replayed prefix drew differently (Flaky: the
    server answered otherwise the second time) or gives up generating (Unsatisfiable), the
    suite ends, as in schemathesis' own runner, and the next seed runs the scenarios left."""
    report = report or FuzzReport()
    schema = load_schema(base_url)
    done = 0

    with requests.Session() as http:

        class Workflow(schema.as_state_machine()):
            def setup(self):
                nonlocal done
                done += 1
                super().setup()

            def get_call_kwargs(self, case):
                return {"base_url": base_url, "session": http, "headers": headers, "timeout": 60}

            def validate_response(self, response, case, additional_checks=None, **kwargs):
                report.requests += 1
                report.statuses[str(response.status_code)] += 1
                try:
                    case.validate_response(
                        response, checks=CHECKS, headers=headers, transport_kwargs=kwargs
                    )
                except FailureGroup as group:
                    curl = case.as_curl_command(headers=headers)
                    for failure in group.exceptions:
                        key = f"{case.operation.label} [stateful] {failure.title}"
                        report.failures.setdefault(
                            key, f"{key}: {failure.message[:400]}\n    {curl}"
                        )

        for seed in range(50):  # a bound in case every suite ended at once
            if done >= scenarios:
                break
            Workflow.rule_order_seed = seed
            settings = hypothesis.settings(
                max_examples=scenarios - done,
                stateful_step_count=steps,
                database=None,
                deadline=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            )
            try:
                hypothesis.seed(seed)(Workflow).run(settings=settings)
            except (hypothesis.errors.Flaky, hypothesis.errors.Unsatisfiable) as error:
                report.skipped.append(f"stateful suite {seed} ended early: {type(error).__name__}")
    report.scenarios += done
    return report
