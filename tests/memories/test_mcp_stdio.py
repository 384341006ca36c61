"""The MCP server on stdio: `manage.py mcp_server --user NAME | --external-user ID` run as a
subprocess on the test database and driven by the SDK's own stdio client."""

import io

import pytest
from django.core.management import CommandError, call_command

from memories import services
from memories.models import Memory, Scope, Source, Status, User
from memories.tools import TOOLS
from tests.conftest import make_user
from tests.memories.helpers import make_memory
from tests.memories.mcp_support import (
    call,
    call_refused,
    calls,
    list_tools,
    over_stdio,
    result_body,
    tool_error,
)

pytestmark = pytest.mark.usefixtures("transactional_db", "openai_embedder")


def test_it_lists_the_registry_tools_with_their_schemas():
    tools = over_stdio(["--user", make_user("owner").username], list_tools)

    assert [tool.name for tool in tools] == list(TOOLS)
    for tool in tools:
        assert tool.inputSchema == TOOLS[tool.name].input_schema
        assert tool.description == TOOLS[tool.name].description


def test_memory_save_writes_an_active_tool_memory_of_the_user():
    owner = make_user("owner")

    result = over_stdio(
        ["--user", "owner"],
        call("memory_save", {"key": "city", "value": "Lives in Lisbon", "confidence": 0.8}),
    )

    memory = Memory.objects.get()
    assert result_body(result)["memory"]["id"] == str(memory.id)
    assert (memory.user, memory.scope, memory.source) == (owner, Scope.USER, Source.TOOL)
    assert (memory.status, memory.confidence, memory.importance) == (Status.ACTIVE, 0.8, 0.5)
    assert memory.revisions.get().actor == owner


def test_an_external_user_is_created_on_first_use_and_gets_every_tool():
    results = over_stdio(
        ["--external-user", "crm-42"],
        calls(
            ("memory_save", {"key": "pet", "value": "Has a golden retriever", "confidence": 1}),
            ("memory_recall", {"query": "golden retriever", "top_k": None}),
            ("memory_context", {"query": "golden retriever"}),
        ),
    )

    user = User.objects.get(external_id="crm-42")
    saved, recalled, context = (result_body(result) for result in results)
    memory = Memory.objects.get(user=user)
    assert saved["memory"]["external_user_id"] == "crm-42"
    assert [hit["id"] for hit in recalled["data"]] == [str(memory.id)]
    assert "pet: Has a golden retriever" in context["hint"]
    assert [hit["id"] for hit in context["memories"]] == [str(memory.id)]


def test_memory_forget_soft_deletes_the_users_memory_and_no_one_elses():
    owner, other = make_user("owner"), make_user("other")
    mine, theirs = make_memory(owner), make_memory(other)

    forgotten, refused = over_stdio(
        ["--user", "owner"],
        calls(
            ("memory_forget", {"memory_id": str(mine.id)}),
            ("memory_forget", {"memory_id": str(theirs.id)}),
        ),
    )

    assert result_body(forgotten) == {"forgotten": str(mine.id)}
    assert tool_error(refused)["fields"].keys() == {"memory_id"}
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.deleted_at is not None
    assert theirs.deleted_at is None


def test_bad_arguments_are_a_tool_error_naming_the_field_and_write_nothing():
    make_user("owner")

    missing = over_stdio(
        ["--user", "owner"], call("memory_save", {"value": "v", "confidence": "high"})
    )
    unknown_tool = over_stdio(["--user", "owner"], call_refused("memory_erase_everything", {}))

    error = tool_error(missing)
    assert error["code"] == "invalid"
    assert set(error["fields"]) == {"key", "confidence"}
    # No tool ran: a protocol error (invalid params), its data naming the argument.
    assert unknown_tool.code == -32602
    assert unknown_tool.data["fields"].keys() == {"name"}
    assert Memory.objects.count() == 0


def test_the_project_option_is_the_context_of_every_call():
    owner = make_user("owner")
    project = services.project_create(owner=owner, name="backend")

    result = over_stdio(
        ["--user", "owner", "--project-id", str(project.id)],
        call(
            "memory_save",
            {"key": "db", "value": "Uses PostgreSQL", "confidence": 1, "scope": "project"},
        ),
    )

    assert result_body(result)["memory"]["project_id"] == str(project.id)
    assert Memory.objects.get().project == project


# --- Refused before serving (no subprocess needed: the command raises) -------------------------


def test_an_unknown_user_is_a_command_error():
    with pytest.raises(CommandError, match="--user: no user named 'nobody'"):
        call_command("mcp_server", "--user", "nobody", stderr=io.StringIO())


def test_an_unknown_external_user_is_a_command_error_without_provisioning(settings):
    settings.AUTO_PROVISION_USERS = False

    with pytest.raises(CommandError, match="--external-user"):
        call_command("mcp_server", "--external-user", "crm-42", stderr=io.StringIO())
    assert not User.objects.filter(external_id="crm-42").exists()


def test_a_project_of_someone_else_is_a_command_error():
    make_user("owner")
    project = services.project_create(owner=make_user("other"), name="theirs")

    with pytest.raises(CommandError, match="--project-id"):
        call_command(
            "mcp_server", "--user", "owner", "--project-id", str(project.id), stderr=io.StringIO()
        )


def test_stdio_needs_to_know_who_it_acts_for():
    with pytest.raises(CommandError, match="--user NAME or --external-user ID"):
        call_command("mcp_server", stderr=io.StringIO())


def test_http_takes_no_user():
    with pytest.raises(CommandError, match="--http"):
        call_command("mcp_server", "--http", "--user", "owner", stderr=io.StringIO())


def test_an_external_user_of_another_tenant_is_another_user():
    make_user("local")
    over_stdio(
        ["--external-user", "crm-42"],
        call("memory_save", {"key": "pet", "value": "Has a cat", "confidence": 1}),
    )

    over_stdio(
        ["--external-user", "crm-42", "--tenant", "clinic"],
        call("memory_save", {"key": "pet", "value": "Has a dog", "confidence": 1}),
    )

    users = User.objects.filter(external_id="crm-42").order_by("date_joined")
    assert [u.tenant.slug for u in users] == ["default", "clinic"]
    assert [m.value for m in Memory.objects.filter(user=users[1])] == ["Has a dog"]
