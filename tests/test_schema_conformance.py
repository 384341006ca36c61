"""The OpenAPI schema tells the truth: generated requests (valid and invalid) for every
documented operation go to a real server (pytest-django's live_server), as a normal user and
as staff; no answer may be a server error, and each answer's status code, content type and
body must be ones the schema documents (tests/schema_fuzz.py).

Bounded for CI: 5 valid and 5 invalid examples per operation, derandomized, no shrinking.
`python -m bench.schema_fuzz` runs the same with more examples and keeps the figures."""

import os
import secrets

import pytest

from memories.models import User
from tests.conftest import client_for
from tests.schema_fuzz import fuzz

MAX_EXAMPLES = int(os.environ.get("SCHEMA_FUZZ_MAX_EXAMPLES", "5"))


@pytest.mark.schema_conformance  # -m "not schema_conformance" leaves it out of a quick run
@pytest.mark.parametrize("is_staff", [False, True], ids=["user", "staff"])
def test_every_answer_of_the_api_matches_its_schema(transactional_db, live_server, is_staff):
    # A random username: POST /api/me/erase takes it as its confirmation, so generated
    # data cannot erase the caller in the middle of the run.
    user = User.objects.create_user(username=f"fuzz-{secrets.token_hex(8)}", is_staff=is_staff)
    authorization = client_for(user)._credentials["HTTP_AUTHORIZATION"]

    report = fuzz(base_url=live_server.url, authorization=authorization, max_examples=MAX_EXAMPLES)

    print(f"\nschema conformance ({'staff' if is_staff else 'user'}): {report.as_dict()}")
    assert report.requests > 0
    assert not report.failures, "\n".join(sorted(report.failures.values()))
