"""The extraction settings page (issue 47, item 1) in a real headless Chromium: staff choose a
tenant and a project, write instructions, categories and exclusions, save, and see what is in
force; the API reads what the page wrote."""

import re

import pytest

from extraction.models import ExtractionSettings
from extraction.steering import steering_for
from memories.accounts.tenants import default_tenant
from memories.models import Project, Tenant
from tests.conftest import make_user
from tests.review.test_browser import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_set_a_tenants_and_a_projects_extraction_settings_in_the_browser(
    browser_page, live_server
):
    tenant = default_tenant()
    Tenant.objects.create(slug="another")
    owner = make_user("cook")
    owner.tenant, owner.external_id = tenant, "cook-1"
    owner.save(update_fields=["tenant", "external_id"])
    project = Project.objects.create(owner=owner, name="Meal plans")
    page = browser_page
    log_in(page, live_server, next_path="/review/extraction-settings")

    # A tenant never saved shows its default exclusions ticked, so saving keeps them.
    assert page.get_by_label(
        "payment card numbers (credit and debit cards, their CVV and expiry)"
    ).is_checked()
    page.get_by_label("Instructions").fill("Remember diets and kitchen equipment.")
    page.get_by_label("Categories").fill("food: diets, allergies, tastes\nkitchen: equipment")
    page.get_by_label(re.compile("health conditions")).check()
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"/review/extraction-settings"))

    assert "Saved" in page.locator("ul.messages li.success").inner_text()
    row = ExtractionSettings.objects.get(tenant=tenant, project=None)
    assert row.categories == [
        {"name": "food", "description": "diets, allergies, tastes"},
        {"name": "kitchen", "description": "equipment"},
    ]
    assert "health" in row.exclude and "payment_cards" in row.exclude
    assert "health" in page.locator("dd.effective-exclude").inner_text()

    page.locator("select[name=project]").select_option(str(project.id))
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(r"project="))
    page.get_by_label("Language").fill("German")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(re.compile(r"project="))

    effective = steering_for(tenant_id=tenant.id, project_id=project.id)
    assert effective.language == "German"
    assert effective.instructions == "Remember diets and kitchen equipment."
    assert "German" in page.locator("dl.effective").inner_text()


def test_a_bad_category_line_changes_nothing_and_says_why(browser_page, live_server):
    default_tenant()
    page = browser_page
    log_in(page, live_server, next_path="/review/extraction-settings")

    page.get_by_label("Categories").fill("food: a\nFOOD: b")
    page.get_by_role("button", name="Save").click()

    assert "categories" in page.locator("ul.messages li.error").inner_text()
    assert not ExtractionSettings.objects.exists()
