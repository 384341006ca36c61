"""No management command crashes on --help: every command of Django, of the third-party apps
we install (django-axes, DRF, drf-spectacular...) and of ours answers its help and exits 0,
run through ManagementUtility as `manage.py NAME --help` runs it, in a child process with the
production settings."""

import json

from tests.processes import run_python

# Every command's --help in one child process (a process per command would take a minute),
# its exit code and any traceback recorded.
EVERY_HELP = r"""
import contextlib, io, json, sys, traceback
import django
django.setup()
from django.core.management import ManagementUtility, get_commands

outcomes = {}
for name, app in sorted(get_commands().items()):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            ManagementUtility(["manage.py", name, "--help"]).execute()
    except SystemExit as exit:
        code = exit.code or 0
    except BaseException:
        code, err = "raised", io.StringIO(traceback.format_exc())
    outcomes[name] = {"app": app, "code": code, "help": out.getvalue(), "err": err.getvalue()}
print(json.dumps(outcomes))
"""


def every_help() -> dict:
    done = run_python(
        ["-c", EVERY_HELP],
        drop=("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"),
        timeout=300,
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="false",
        SECRET_KEY="test-only-secret-key",
        EMBEDDER="none",
        LOG_LEVEL="WARNING",
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_management_command_answers_help_and_exits_0():
    outcomes = every_help()

    apps = {outcome["app"] for outcome in outcomes.values()}
    assert {"memories", "extraction", "axes", "rest_framework", "drf_spectacular"} <= apps
    assert {"unlock_login", "axes_reset", "axes_reset_ip", "scan_extractions"} <= set(outcomes)
    failed = {
        name: (outcome["code"], outcome["err"][-2000:])
        for name, outcome in outcomes.items()
        if outcome["code"] != 0 or "Traceback" in outcome["err"] or "usage:" not in outcome["help"]
    }
    assert failed == {}
