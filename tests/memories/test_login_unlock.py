"""The way out of a login lockout: `manage.py unlock_login` (--username, --address, --all),
run as a process of its own as an operator would, lets the locked-out login in again through
POST /api/auth/token and /admin/login/ of this (another) process; so do axes' own reset
commands. The counted failures are database rows, so this holds on SQLite and PostgreSQL."""

import subprocess
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import make_user
from tests.memories.mcp_support import database_url
from tests.processes import run_python

LIMIT = 3
ADDRESS_LIMIT = 6
ADDRESS = "198.51.100.44"

# The command's process reads rows this one committed: no test transaction around them.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def strict_limits(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.LOGIN_ADDRESS_FAILURE_LIMIT = ADDRESS_LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(seconds=600)


def manage(*arguments: str) -> subprocess.CompletedProcess:
    """manage.py ARGUMENTS in a process of its own, on the test database, with production
    settings."""
    return run_python(
        ["manage.py", *arguments],
        drop=("DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL", "CACHE_URL"),
        timeout=300,
        DEBUG="false",
        SECRET_KEY="test-only-secret-key",
        DATABASE_URL=database_url(),
        EMBEDDER="none",
        LOG_LEVEL="WARNING",
    )


def unlocked_by(*arguments: str) -> str:
    done = manage(*arguments)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


def token_login(username: str, password: str, address: str = ADDRESS):
    return APIClient(REMOTE_ADDR=address).post(
        "/api/auth/token", {"username": username, "password": password}, format="json"
    )


def admin_login(username: str, password: str, address: str = ADDRESS):
    browser = Client(REMOTE_ADDR=address)
    form = {"username": username, "password": password, "next": "/admin/"}
    return browser.post("/admin/login/", form)


def lock_out_the_pair(username: str) -> None:
    for i in range(LIMIT):
        token_login(username, f"guess {i}")
    assert token_login(username, f"pw-{username}").status_code == 429


def lock_out_the_address() -> None:
    for i in range(ADDRESS_LIMIT):
        token_login(f"guesser-{i}", "guess")
    assert token_login("someone", "guess").status_code == 429


def test_unlock_by_username_lets_the_user_log_in_through_the_api_again():
    make_user("carol")
    lock_out_the_pair("carol")

    output = unlocked_by("unlock_login", "--username", "carol")

    assert "Unlocked carol" in output
    response = token_login("carol", "pw-carol")
    assert response.status_code == 200, response.content[:300]
    assert "token" in response.json()


def test_unlock_by_username_lets_the_admin_log_in_to_the_admin_again():
    make_user("boss", is_staff=True)
    for i in range(LIMIT):
        admin_login("boss", f"guess {i}")
    assert admin_login("boss", "pw-boss").status_code == 429

    unlocked_by("unlock_login", "--username", "boss")

    page = admin_login("boss", "pw-boss")
    assert page.status_code == 302 and page["Location"] == "/admin/"


def test_unlock_by_address_lifts_the_lock_of_an_address_for_everyone():
    make_user("boss", is_staff=True)
    lock_out_the_address()
    assert admin_login("boss", "pw-boss").status_code == 429

    unlocked_by("unlock_login", "--address", ADDRESS)

    assert admin_login("boss", "pw-boss").status_code == 302
    assert not AccessAttempt.objects.filter(ip_address=ADDRESS).exists()


def test_unlock_all_lifts_every_lock_and_leaves_other_addresses_alone_otherwise():
    make_user("carol")
    lock_out_the_pair("carol")
    for i in range(LIMIT):
        token_login("dave", f"guess {i}", address="203.0.113.5")

    unlocked_by("unlock_login", "--username", "carol")
    assert AccessAttempt.objects.filter(username="dave").exists()  # not named: kept
    output = unlocked_by("unlock_login", "--all")

    assert "every login" in output
    assert not AccessAttempt.objects.exists()


def test_unlock_without_a_target_says_what_to_give_and_changes_nothing():
    make_user("carol")
    lock_out_the_pair("carol")

    done = manage("unlock_login")

    assert done.returncode == 1
    assert "--username NAME, --address IP, or --all" in done.stderr
    assert "Traceback" not in done.stderr
    assert token_login("carol", "pw-carol").status_code == 429


@pytest.mark.parametrize(
    "command",
    [["axes_reset_ip", ADDRESS], ["axes_reset"]],
    ids=["axes_reset_ip", "axes_reset"],
)
def test_axes_own_reset_commands_lift_an_address_lock_from_another_process(command):
    make_user("boss", is_staff=True)
    lock_out_the_address()

    unlocked_by(*command)

    assert token_login("boss", "pw-boss").status_code == 200
    assert admin_login("boss", "pw-boss").status_code == 302
