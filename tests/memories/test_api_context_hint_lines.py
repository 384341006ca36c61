"""POST /api/memories/context: what a memory line of the hint says. Each line ends with the
day of the memory's last update, the block names today once, and no line takes more than
MEMORY_HINT_MAX_SHARE of the budget (a longer memory is cut in the hint only)."""

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.utils import timezone as django_timezone

from memories.models import Memory
from memories.recall.hint import CLOSE, ELLIPSIS, OPEN, PREAMBLE, memory_hint
from memories.recall.scopes import recall_scopes
from tests.memories.helpers import make_memory

URL = "/api/memories/context"
DIET = {"query": "what should I cook, I am vegetarian"}


def memory_lines(hint: str) -> list[str]:
    return [line for line in hint.splitlines() if line.startswith("- ")]


def updated_on(memory: Memory, when: datetime) -> None:
    # update() leaves auto_now alone, so the row keeps the time given.
    Memory.objects.filter(id=memory.id).update(updated_at=when)


def utc_today() -> str:
    return django_timezone.now().astimezone(UTC).date().isoformat()


def test_each_memory_line_ends_with_the_day_of_its_last_update(api, owner):
    diet = make_memory(owner, key="diet", value="Vegetarian", category="food")
    updated_on(diet, datetime(2026, 11, 3, 10, 0, tzinfo=UTC))

    response = api.post(URL, DIET, format="json")

    assert response.status_code == 200
    assert memory_lines(response.json()["hint"]) == ["- [food] diet: Vegetarian (2026-11-03)"]


def test_the_day_is_taken_in_utc(api, owner):
    diet = make_memory(owner, key="diet", value="Vegetarian")
    # 01:30 on 4 November in UTC+3 is still 3 November in UTC.
    updated_on(diet, datetime(2026, 11, 4, 1, 30, tzinfo=timezone(timedelta(hours=3))))

    hint = api.post(URL, DIET, format="json").json()["hint"]

    assert memory_lines(hint) == ["- diet: Vegetarian (2026-11-03)"]


def test_an_edit_moves_the_day_forward(api, owner):
    diet = make_memory(owner, key="diet", value="Vegetarian")
    updated_on(diet, datetime(2025, 1, 2, tzinfo=UTC))

    before = utc_today()
    edited = api.patch(f"/api/memories/{diet.id}", {"value": "Vegetarian, eats fish"}, "json")
    hint = api.post(URL, DIET, format="json").json()["hint"]
    after = utc_today()

    assert edited.status_code == 200
    [line] = memory_lines(hint)
    assert line in {f"- diet: Vegetarian, eats fish ({day})" for day in (before, after)}


def test_the_block_names_today_once_after_the_preamble(api, owner):
    diet = make_memory(owner, key="diet", value="Vegetarian")
    updated_on(diet, datetime(2025, 1, 2, tzinfo=UTC))

    before = utc_today()
    hint = api.post(URL, DIET, format="json").json()["hint"]
    after = utc_today()

    lines = hint.splitlines()
    assert lines[:2] == [OPEN, PREAMBLE]
    assert lines[2] in {f"Today is {before}.", f"Today is {after}."}
    assert hint.count("Today is") == 1
    assert hint.count(lines[2][len("Today is ") : -1]) == 1
    assert lines[3:] == ["- diet: Vegetarian (2025-01-02)", CLOSE]


def test_today_is_the_utc_day_of_the_now_given(owner):
    diet = make_memory(owner, key="diet", value="Vegetarian")
    updated_on(diet, datetime(2026, 11, 3, tzinfo=UTC))
    # 00:30 on 2 December in UTC+2 is still 1 December in UTC.
    now = datetime(2026, 12, 2, 0, 30, tzinfo=timezone(timedelta(hours=2)))

    hint, used = memory_hint(
        query=DIET["query"], scopes=recall_scopes(user=owner), top_k=5, budget=6000, now=now
    )

    assert [hit.memory.id for hit in used] == [diet.id]
    assert hint.splitlines()[2] == "Today is 2026-12-01."
    assert hint.count("2026-12-01") == 1


def test_no_memories_give_no_block_and_no_date(api, owner):
    response = api.post(URL, DIET, format="json")

    assert response.json() == {"hint": "", "memories": [], "profile": None}


def test_a_long_memory_is_cut_to_its_share_in_the_hint_only(api, owner, settings):
    value = ("Vegetarian cooking notes: " + "lentils and chickpeas with rice " * 200)[:4000]
    diet = make_memory(owner, key="diet", value=value)
    updated_on(diet, datetime(2026, 11, 3, tzinfo=UTC))
    share = int(settings.MEMORY_HINT_BUDGET_CHARS * settings.MEMORY_HINT_MAX_SHARE)

    body = api.post(URL, DIET, format="json").json()

    [line] = memory_lines(body["hint"])
    assert share - 10 <= len(line) <= share
    assert line.startswith("- diet: Vegetarian cooking notes: lentils")
    assert line.endswith(f"{ELLIPSIS} (2026-11-03)")
    assert body["memories"][0]["value"] == value
    assert Memory.objects.get(id=diet.id).value == value


@pytest.mark.parametrize("budget", [2400, 2401, 2402, 2403])
def test_a_cut_never_splits_an_escaped_character(api, owner, settings, budget):
    settings.MEMORY_HINT_BUDGET_CHARS = budget  # lines of 600 to 603 characters
    make_memory(owner, key="diet", value="vegetarian " + "<&>" * 1300)

    hint = api.post(URL, DIET, format="json").json()["hint"]

    [line] = memory_lines(hint)
    assert len(line) <= budget // 4
    cut = line.removeprefix("- diet: vegetarian ").removesuffix(f"{ELLIPSIS} ({utc_today()})")
    assert re.fullmatch(r"(&lt;|&amp;|&gt;)+", cut), cut[-12:]


def test_the_budget_holds_with_several_long_memories(api, owner, settings):
    settings.MEMORY_HINT_BUDGET_CHARS = 2000
    for i in range(5):
        make_memory(owner, key=f"recipe {i}", value=f"Vegetarian recipe {i}: " + "beans " * 600)

    body = api.post(URL, {"query": "vegetarian recipe beans"}, format="json").json()

    assert 0 < len(body["hint"]) <= 2000
    lines = memory_lines(body["hint"])
    assert len(lines) == len(body["memories"]) >= 2
    assert all(len(line) <= 500 and ELLIPSIS in line for line in lines)
    assert all(len(memory["value"]) > 3000 for memory in body["memories"])
