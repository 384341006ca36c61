"""Logins cannot be brute-forced: POST /api/auth/token and /admin/login/ count failures per
client address and per username (django-axes, in the configured cache) and answer 429 with
Retry-After once either reaches LOGIN_FAILURE_LIMIT, without hashing the password again."""

import json
import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.contrib.auth.hashers import MD5PasswordHasher
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.conftest import make_user
from tests.memories.helpers import assert_error

TOKEN_URL = "/api/auth/token"
LIMIT = 3
COOLOFF_SECONDS = 120
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def strict_limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
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


def test_a_username_is_locked_out_whatever_address_the_guesses_come_from(owner, other):
    for i in range(LIMIT):
        log_in("owner", f"guess {i}", address=f"203.0.113.{i + 1}")

    assert_locked_out(log_in("owner", "pw-owner", address="192.0.2.77"))
    # Only that username: another user logs in from the same fresh address.
    assert log_in("other", "pw-other", address="192.0.2.77").status_code == 200


def test_an_address_is_locked_out_whatever_usernames_it_tries(owner):
    for i in range(LIMIT - 1):
        assert_error(log_in(f"nobody-{i}", "guess", address="203.0.113.9"), 400)
    assert_locked_out(log_in("nobody-else", "guess", address="203.0.113.9"))

    assert_locked_out(log_in("owner", "pw-owner", address="203.0.113.9"))
    # Only that address: the user logs in from elsewhere.
    assert log_in("owner", "pw-owner", address="203.0.113.10").status_code == 200


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
    assert_locked_out(log_in("boss", "pw-boss", address="198.51.100.21"))


def test_behind_a_proxy_each_forwarded_client_is_counted_on_its_own(owner, settings):
    settings.TRUSTED_PROXY_COUNT = 1
    proxy = "10.0.0.1"
    for i in range(LIMIT):
        # The client's own X-Forwarded-For entry comes first; the proxy appends the address
        # it saw, and only that one counts.
        log_in(
            f"nobody-{i}",
            "guess",
            address=proxy,
            HTTP_X_FORWARDED_FOR=f"192.0.2.{i}, 203.0.113.50",
        )

    locked = log_in("owner", "pw-owner", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.50")
    assert_locked_out(locked)
    other_client = log_in("owner", "pw-owner", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.51")
    assert other_client.status_code == 200


# --- Several processes share the counts through Redis --------------------------------------

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


def attempts_in_a_process(environment: dict, address: str, *passwords: str) -> list:
    """Log in as carol in a Python process of its own (its own cache client), as a second
    web process would; the statuses and Retry-After headers it got."""
    done = subprocess.run(
        [sys.executable, "-c", ATTEMPTS, address, *passwords],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_with_redis_a_lockout_in_one_process_holds_in_another(tmp_path):
    prefix = f"axes-test-{uuid.uuid4().hex[:12]}"
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "test-only-secret-key",
        "DEBUG": "false",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'shared.sqlite3'}",
        "CACHE_URL": f"redis://127.0.0.1:6379/1?key_prefix={prefix}",
        "LOGIN_FAILURE_LIMIT": str(LIMIT),
        "LOGIN_COOLOFF_SECONDS": str(COOLOFF_SECONDS),
        "EMBEDDER": "none",
    }
    environment.pop("CELERY_BROKER_URL", None)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=REPO,
        env=environment,
        check=True,
        timeout=300,
    )
    server = redis.Redis.from_url("redis://127.0.0.1:6379/1")
    try:
        # Two web processes: the first sees the guesses, the second the right password.
        first = attempts_in_a_process(environment, "198.51.100.31", *["wrong"] * LIMIT)
        second = attempts_in_a_process(environment, "198.51.100.32", "pw-carol")

        assert [status for status, _ in first] == [400] * (LIMIT - 1) + [429]
        assert second == [[429, str(COOLOFF_SECONDS)]]
        assert server.keys(f"{prefix}:*")  # the counts are in Redis
    finally:
        keys = server.keys(f"{prefix}:*")
        if keys:
            server.delete(*keys)
        server.close()
