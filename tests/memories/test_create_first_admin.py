"""manage.py create_first_admin (run by scripts/serve): the first staff login is printed on
every start from a password file of its own database, and only if it still opens that
database's login."""

import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memories.models import User

REPO = Path(__file__).resolve().parents[2]
PRINTED = re.compile(r"Staff login: username admin  password (\S+)")


@pytest.fixture
def var(settings, tmp_path) -> Path:
    """BASE_DIR is a scratch directory: password files land in its var/."""
    settings.BASE_DIR = tmp_path
    return tmp_path / "var"


def first_admin() -> str:
    out = StringIO()
    call_command("create_first_admin", stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = PRINTED.search(output)
    assert match, output
    return match.group(1)


def test_it_creates_the_admin_once_and_prints_the_same_working_password(db, var):
    password = printed_password(first_admin())

    assert printed_password(first_admin()) == password
    assert User.objects.filter(username="admin", is_staff=True, is_superuser=True).count() == 1
    assert User.objects.get(username="admin").check_password(password)
    [stored] = var.glob("first-admin-password-*.txt")
    assert stored.read_text().strip() == password
    assert stored.stat().st_mode & 0o777 == 0o600


def test_another_databases_password_in_the_old_shared_file_is_not_printed(db, var):
    password = printed_password(first_admin())
    # What the old code did when another database created its admin: overwrite the one file.
    (var / "first-admin-password.txt").write_text("another-databases-password\n")

    output = first_admin()

    assert printed_password(output) == password
    assert "another-databases-password" not in output


def test_a_password_the_admin_has_changed_since_is_not_printed(db, var):
    first_admin()
    admin = User.objects.get(username="admin")
    admin.set_password("changed-by-the-admin")
    admin.save()

    output = first_admin()

    assert "password" not in output.replace("its password is not stored here", "")
    assert "Staff login 'admin' exists; its password is not stored here." in output


def test_the_old_shared_file_is_still_read_when_it_holds_this_databases_password(db, var):
    User.objects.create_superuser("admin", password="from-before-the-upgrade", email="")
    var.mkdir()
    (var / "first-admin-password.txt").write_text("from-before-the-upgrade\n")

    assert printed_password(first_admin()) == "from-before-the-upgrade"


def test_two_databases_served_in_turn_each_print_their_own_password(tmp_path):
    """SQLite, then another database, then SQLite again, from one checkout (the bug report
    used PostgreSQL for the second; two SQLite files show the same)."""
    (tmp_path / "checkout_settings.py").write_text(
        "from pathlib import Path\n"
        "from config.settings import *  # noqa\n"
        f"BASE_DIR = Path({str(tmp_path)!r})\n"
    )
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "checkout_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)]),
        "SECRET_KEY": "test-only-secret-key",
        "EMBEDDER": "none",
    }

    def serve(database: str) -> str:
        """What scripts/serve runs before the server (migrate only for a new database)."""
        env = {**environment, "DATABASE_URL": f"sqlite:///{tmp_path / database}"}
        commands = [["create_first_admin"]]
        if not (tmp_path / database).exists():
            commands.insert(0, ["migrate", "--noinput", "-v0"])
        for command in commands:
            done = subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=REPO,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr
        return printed_password(done.stdout)

    first = serve("first.sqlite3")
    second = serve("second.sqlite3")

    assert first != second
    assert serve("first.sqlite3") == first
    assert serve("second.sqlite3") == second
    assert len(list((tmp_path / "var").glob("first-admin-password-*.txt"))) == 2
