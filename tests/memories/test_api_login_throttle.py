"""Logins cannot be brute-forced, nor a user locked out from elsewhere: POST /api/auth/token and
/admin/login/ count failures per (username, client address) and per address (django-axes, in
database rows every process shares) and answer 429 with Retry-After once the pair reaches
LOGIN_FAILURE_LIMIT or the address LOGIN_ADDRESS_FAILURE_LIMIT, without hashing the password
again."""

import json
import logging
import os
import sqlite3
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.conftest import make_user
from tests.memories.helpers import assert_error

TOKEN_URL = "/api/auth/token"
LIMIT = 3
ADDRESS_LIMIT = 7
COOLOFF_SECONDS = 120
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def strict_limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = ADDRESS_LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(seconds=COOLOFF_SECONDS)


@pytest.fixture
def hashes(monkeypatch) -> list[str]:
    """Every password hash computed (checked or made) while the test runs."""
    computed: list[str] = []
    verify, encode = MD5PasswordHasher.verify, MD5PasswordHasher.encode

    def counting_verify(self, password, encoded):
        computed.append("verify")
        return verify(self, password, encoded)

    def counting_encode(self, password, salt):
        computed.append("encode")
        return encode(self, password, salt)

    monkeypatch.setattr(MD5PasswordHasher, "verify", counting_verify)
    monkeypatch.setattr(MD5PasswordHasher, "encode", counting_encode)
    return computed


def log_in(username: str, password: str, *, address: str = "198.51.100.1", **headers):
    client = APIClient(REMOTE_ADDR=address, **headers)
    return client.post(TOKEN_URL, {"username": username, "password": password}, format="json")


def assert_locked_out(response) -> dict:
    error = assert_error(response, 429)
    assert error["code"] == "throttled"
    assert response["Retry-After"] == str(COOLOFF_SECONDS)
    assert "token" not in response.json()
    return error


def test_the_limit_th_wrong_password_and_every_login_after_it_answer_429(owner):
    for _ in range(LIMIT - 1):
        assert_error(log_in("owner", "wrong"), 400, "password")

    error = assert_locked_out(log_in("owner", "wrong"))

    assert f"try again in {COOLOFF_SECONDS} seconds" in error["detail"]
    assert_locked_out(log_in("owner", "pw-owner"))
    assert not Token.objects.filter(user=owner).exists()


def test_a_locked_out_login_computes_no_password_hash(owner, hashes):
    for _ in range(LIMIT):
        log_in("owner", "wrong")
    assert hashes  # the failures before the lockout were checked
    hashes.clear()

    for password in ("wrong", "pw-owner", "another guess"):
        assert_locked_out(log_in("owner", password))

    assert hashes == []


def test_guesses_from_one_address_do_not_lock_the_user_out_elsewhere(owner):
    for i in range(LIMIT):
        log_in("owner", f"guess {i}", address="203.0.113.1")

    assert_locked_out(log_in("owner", "pw-owner", address="203.0.113.1"))
    assert log_in("owner", "pw-owner", address="192.0.2.77").status_code == 200


def test_a_locked_username_does_not_lock_its_address_for_other_users(owner):
    for i in range(LIMIT):
        log_in("nobody", f"guess {i}", address="203.0.113.9")

    assert_locked_out(log_in("nobody", "guess", address="203.0.113.9"))
    assert log_in("owner", "pw-owner", address="203.0.113.9").status_code == 200


def test_an_address_is_locked_out_for_everyone_at_its_own_higher_limit(owner):
    for i in range(ADDRESS_LIMIT - 1):
        assert_error(log_in(f"nobody-{i}", "guess", address="203.0.113.9"), 400)
    assert_locked_out(log_in("nobody-else", "guess", address="203.0.113.9"))

    assert_locked_out(log_in("owner", "pw-owner", address="203.0.113.9"))
    # Only that address: the user logs in from elsewhere.
    assert log_in("owner", "pw-owner", address="203.0.113.10").status_code == 200


def test_a_staff_lockout_is_logged_once_with_the_way_to_lift_it(db, caplog):
    make_user("boss", is_staff=True)
    make_user("clerk")
    caplog.set_level(logging.WARNING, logger="config.login_throttle")

    for name in ("boss", "clerk"):
        for i in range(LIMIT + 2):  # the lockout, then two refused attempts
            log_in(name, f"guess {i}", address="203.0.113.70")

    warnings = [r.getMessage() for r in caplog.records if r.name == "config.login_throttle"]
    assert len(warnings) == 1, warnings
    assert "'boss'" in warnings[0] and "203.0.113.70" in warnings[0]
    assert "manage.py unlock_login --username boss" in warnings[0]


def test_a_correct_password_before_the_limit_still_logs_in(owner):
    for _ in range(LIMIT - 1):
        assert_error(log_in("owner", "wrong"), 400)

    response = log_in("owner", "pw-owner")

    assert response.status_code == 200, response.json()
    assert response.json()["token"] == Token.objects.get(user=owner).key


def test_the_admin_login_locks_out_too_and_shares_the_count_with_the_api(db):
    make_user("boss", is_staff=True)
    browser = Client(REMOTE_ADDR="198.51.100.20")
    form = {"username": "boss", "password": "wrong", "next": "/admin/"}

    for _ in range(LIMIT - 1):
        page = browser.post("/admin/login/", form)
        assert page.status_code == 200  # the form again, with its error
    locked = browser.post("/admin/login/", form)

    assert locked.status_code == 429
    assert locked["Retry-After"] == str(COOLOFF_SECONDS)
    assert locked["Content-Type"].startswith("text/html")
    assert b"Too many failed logins" in locked.content
    right = browser.post("/admin/login/", {**form, "password": "pw-boss"})
    assert right.status_code == 429 and "_auth_user_id" not in browser.session
    assert_locked_out(log_in("boss", "pw-boss", address="198.51.100.20"))
    assert log_in("boss", "pw-boss", address="198.51.100.21").status_code == 200


def test_behind_a_proxy_each_forwarded_client_is_counted_on_its_own(owner, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.1"
    for i in range(LIMIT):
        # The client's own X-Forwarded-For entry comes first; the proxy appends the address
        # it saw, and only that one counts.
        log_in(
            "owner", f"guess {i}", address=proxy, HTTP_X_FORWARDED_FOR=f"192.0.2.{i}, 203.0.113.50"
        )

    locked = log_in("owner", "pw-owner", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.50")
    assert_locked_out(locked)
    other_client = log_in("owner", "pw-owner", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.51")
    assert other_client.status_code == 200


# --- Several processes share the counts ---------------------------------------------------

ATTEMPTS = """
import json
import sys

import django

django.setup()
from django.test import Client

from memories.models import User

address, passwords = sys.argv[1], sys.argv[2:]
if not User.objects.filter(username="carol").exists():
    User.objects.create_user("carol", password="pw-carol")
statuses = []
for password in passwords:
    response = Client(REMOTE_ADDR=address, HTTP_HOST="localhost").post(
        "/api/auth/token",
        {"username": "carol", "password": password},
        content_type="application/json",
    )
    statuses.append([response.status_code, response.get("Retry-After")])
print(json.dumps(statuses))
"""


def run(environment: dict, *command: str) -> str:
    done = subprocess.run(
        [sys.executable, *command],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def attempts_in_a_process(environment: dict, address: str, *passwords: str) -> list:
    """Log in as carol in a Python process of its own (its own memory), as a second web
    process would; the statuses and Retry-After headers it got."""
    output = run(environment, "-c", ATTEMPTS, address, *passwords)
    return json.loads(output.strip().splitlines()[-1])


def test_a_lockout_in_one_process_holds_in_another_until_the_command_lifts_it(tmp_path):
    database = tmp_path / "shared.sqlite3"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "test-only-secret-key",
        "DEBUG": "false",
        "DATABASE_URL": f"sqlite:///{database}",
        "LOGIN_FAILURE_LIMIT": str(LIMIT),
        "LOGIN_COOLOFF_SECONDS": str(COOLOFF_SECONDS),
        "EMBEDDER": "none",
    }
    for name in ("CELERY_BROKER_URL", "CACHE_URL"):  # each process has its own memory cache
        environment.pop(name, None)
    run(environment, "manage.py", "migrate", "--noinput", "-v0")

    # Two web processes: the first sees the guesses, the second the right password.
    first = attempts_in_a_process(environment, "198.51.100.31", *["wrong"] * LIMIT)
    second = attempts_in_a_process(environment, "198.51.100.31", "pw-carol")
    run(environment, "manage.py", "axes_reset_username", "carol")
    lifted = attempts_in_a_process(environment, "198.51.100.31", "pw-carol")

    assert [status for status, _ in first] == [400] * (LIMIT - 1) + [429]
    assert second == [[429, str(COOLOFF_SECONDS)]]
    assert lifted == [[200, None]]
    with sqlite3.connect(database) as db:  # what is left: nothing, the lock was lifted
        assert db.execute("SELECT count(*) FROM axes_accessattempt").fetchone() == (0,)


def test_a_failed_login_with_nul_bytes_in_its_headers_is_counted_not_a_500(owner):
    # axes stores the User-Agent, Accept and path of a failure; PostgreSQL's text refuses NUL.
    headers = {"HTTP_USER_AGENT": "agent\x00x", "HTTP_ACCEPT": "application/json, \x00/*"}

    for _ in range(LIMIT - 1):  # the first failure creates the row, the next one updates it
        assert_error(log_in("owner", "wrong", **headers), 400, "password")

    assert_locked_out(log_in("owner", "wrong", **headers))
    [attempt] = AccessAttempt.objects.all()
    assert "\x00" not in attempt.user_agent + attempt.http_accept


def test_a_lockout_of_a_username_with_spaces_warns_no_cache_key_problem(db, recwarn):
    for i in range(LIMIT + 1):
        log_in("a name with spaces", f"guess {i}")

    assert_locked_out(log_in("a name with spaces", "guess"))
    assert not [w for w in recwarn if "CacheKeyWarning" in type(w.message).__name__]
