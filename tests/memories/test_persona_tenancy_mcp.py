"""MCP over HTTP with another tenant's key: a persona_id of acme's in the URL is refused as
an unknown one is, and memory_forget of acme's persona memory changes nothing."""

import uuid

import httpx
import pytest

from memories import services
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import Memory, Persona, Scope
from tests.memories.mcp_support import (
    ACCEPT,
    INITIALIZE,
    call,
    http_server,
    over_http,
    tool_error,
)

pytestmark = pytest.mark.usefixtures("transactional_db", "openai_embedder")


def globex_headers() -> dict[str, str]:
    _, raw = api_key_create(
        name="globex", scopes=["read", "write"], tenant=tenant_get_or_create(slug="globex")
    )
    return {"Authorization": f"Bearer {raw}", "X-User-Id": "mallory"}


def test_another_tenants_persona_in_the_url_is_refused_as_an_unknown_one():
    persona = Persona.objects.create(name="Concierge", tenant=tenant_get_or_create(slug="acme"))
    headers = {**ACCEPT, **globex_headers()}

    with http_server() as url:
        acmes = httpx.post(f"{url}?persona_id={persona.id}", json=INITIALIZE, headers=headers)
        unknown_id = uuid.uuid4()
        unknown = httpx.post(f"{url}?persona_id={unknown_id}", json=INITIALIZE, headers=headers)

    assert acmes.status_code == unknown.status_code == 400
    assert acmes.text.replace(str(persona.id), "<id>") == unknown.text.replace(
        str(unknown_id), "<id>"
    )


def test_memory_forget_of_another_tenants_persona_memory_changes_nothing():
    persona = Persona.objects.create(name="Concierge", tenant=tenant_get_or_create(slug="acme"))
    memory = services.memory_create(
        actor=None, key="tip", value="Recommend anvils", scope=Scope.PERSONA, persona=persona
    )

    with http_server() as url:
        result = over_http(
            url, globex_headers(), call("memory_forget", {"memory_id": str(memory.id)})
        )

    assert result.isError
    assert "memory_id" in str(tool_error(result))
    assert Memory.objects.get(id=memory.id).deleted_at is None
