"""The production environment of docs/operations.md passes `manage.py check --deploy`,
and the defaults keep plain-http local serving working."""

import pytest

from tests.config.test_environment import manage

# docs/operations.md, Production: the variables beyond DATABASE_URL and CELERY_BROKER_URL.
PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "kR3v9-Jq2Lm8Xz0Tt5Wb7Yc1Hd4Gf6Ns2Pe9Ua3Vo8Ki5Rj7Qh1Mx",
    "ALLOWED_HOSTS": "memory.example.com",
    "CSRF_TRUSTED_ORIGINS": "https://memory.example.com",
    "SECURE_SSL_REDIRECT": "true",
    "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto,https",
    "TRUSTED_PROXY_COUNT": "1",
    "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "true",
    "SECURE_HSTS_PRELOAD": "true",
    "SESSION_COOKIE_SECURE": "true",
    "CSRF_COOKIE_SECURE": "true",
    "CACHE_URL": "redis://127.0.0.1:6379/1",
}


def test_the_documented_production_environment_passes_the_deploy_checks():
    # The security checks: Django's deployment list, django-axes's and django-csp's. (The
    # untagged drf-spectacular schema check belongs to the schema tests.)
    done = manage("check", "--deploy", "--tag", "security", "--fail-level", "WARNING", **PRODUCTION)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."


@pytest.mark.parametrize(
    "left_out",
    [
        "SECURE_SSL_REDIRECT",
        "SECURE_HSTS_SECONDS",
        "SECURE_HSTS_PRELOAD",
        "SESSION_COOKIE_SECURE",
        "CSRF_COOKIE_SECURE",
        "CACHE_URL",
    ],
)
def test_each_production_variable_is_read_from_the_environment(left_out):
    environment = {key: value for key, value in PRODUCTION.items() if key != left_out}

    done = manage("check", "--deploy", "--tag", "security", **environment)

    assert "System check identified no issues" not in done.stdout + done.stderr


def test_by_default_pages_are_served_over_plain_http(client, settings):
    assert not settings.SECURE_SSL_REDIRECT
    assert not settings.SESSION_COOKIE_SECURE and not settings.CSRF_COOKIE_SECURE

    page = client.get("/admin/login/")

    assert page.status_code == 200
    assert "Strict-Transport-Security" not in page
