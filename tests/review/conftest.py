"""Clients for the review pages, and a real headless Chromium for the browser tests."""

import os
from pathlib import Path

import pytest
from django.test import Client

from memories.models import User

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"


def logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def staff_client(staff) -> Client:
    return logged_in(staff)


@pytest.fixture
def owner_client(owner) -> Client:
    """Signed in, but not staff."""
    return logged_in(owner)


@pytest.fixture
def superuser(db) -> User:
    return User.objects.create_superuser("root", "root@example.com", "pw-root")


@pytest.fixture
def superuser_client(superuser) -> Client:
    return logged_in(superuser)


@pytest.fixture(scope="module")
def chromium():
    """One headless Chromium per module, driven through Playwright's sync API.

    The sync API keeps an asyncio loop running in this thread, and Django refuses ORM calls
    from a thread with a running loop, so the browser tests allow them while the loop lives.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing; install Debian's chromium package")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
            )
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def browser_page(chromium, request):
    """A fresh browser tab at laptop size; parametrize `viewport` indirectly to change it."""
    width, height = getattr(request, "param", (1280, 800))
    context = chromium.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
