"""Personas belong to a tenant: another tenant's keys (read, write, review; for an end user
and acting as themselves) walk every route and every tool at acme's persona and its memories,
and get what an unknown id gets, change nothing and read nothing of it.

The routes come from the URL configuration and the tools from the tool registry: a route or
tool added later fails test_every_route_is_walked_or_said_to_be_unrelated until it is walked
here or listed, with the reason, as having nothing to do with personas."""

import json
import re
import uuid
from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from django.contrib.auth.models import Permission
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from memories import services, tools
from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
from memories.models import (
    ConsolidationProposal,
    Memory,
    MemoryRevision,
    Persona,
    ProposalKind,
    Scope,
    Status,
    Topic,
    User,
)
from tests.conftest import key_client

ACME = "acme-corp"
PERSONA_NAME = "Acme Concierge"
# Text only acme's memories hold: it must never appear in an answer to globex.
SECRETS = {
    "persona": "Always recommend anvils by the crate",
    "pending": "Suggest the rocket skates next",
    "deleted": "Mention the giant magnet sale",
    "persona_user": "Alice likes the concierge to be brief",
}
NDJSON = "application/x-ndjson"
OWN_IMPORTED_KEY = re.compile(r"tip [0-9a-f-]{36}")
CSRF_TOKEN = re.compile(r'(?<=name="csrfmiddlewaretoken" value=")[^"]+')


@dataclass
class Call:
    """One request; `ids` are acme's ids it names (replaced by unknown ones for the
    comparison)."""

    method: str
    path: str
    body: object = None
    content_type: str = "application/json"
    ids: list[str] = field(default_factory=list)

    def sent_with(self, replacements: dict[str, str]) -> "Call":
        def swap(text: str) -> str:
            for old, new in replacements.items():
                text = text.replace(old, new)
            return text

        body = self.body
        if body is not None:
            raw = body if isinstance(body, str) else json.dumps(body)
            body = swap(raw) if isinstance(body, str) else json.loads(swap(raw))
        return Call(self.method, swap(self.path), body, self.content_type, self.ids)


def send(client, call: Call):
    """The answer to `call`, its body read (a streamed one too)."""
    # A page shows the messages earlier calls left; each call starts without any.
    client.cookies.pop("messages", None)
    response = _send(client, call)
    if response.streaming:
        response.body_text = b"".join(response.streaming_content).decode()
    else:
        response.body_text = response.content.decode()
    return response


def _send(client, call: Call):
    method = getattr(client, call.method.lower())
    if call.body is None:
        return method(call.path)
    if call.content_type == "form":
        return method(call.path, call.body)
    data = call.body if isinstance(call.body, str) else json.dumps(call.body)
    return method(call.path, data, content_type=call.content_type)


@pytest.fixture
def acme(db):
    """acme's persona (made by acme's review key), its memories in every state, and its end
    user alice's topic with the persona, persona_user memory and consolidation proposal."""
    tenant = tenant_get_or_create(slug=ACME)
    _, review_key = api_key_create(name="acme review", scopes=["review"], tenant=tenant)
    _, write_key = api_key_create(name="acme app", scopes=["read", "write"], tenant=tenant)
    response = key_client(review_key, None).post(
        "/api/personas", {"name": PERSONA_NAME}, format="json"
    )
    assert response.status_code == 201, response.content
    persona = Persona.objects.get(id=response.json()["id"])
    topic_response = key_client(write_key, "ext-alice").post(
        "/api/topics", {"title": "chat", "persona_id": str(persona.id)}, format="json"
    )
    assert topic_response.status_code == 201, topic_response.content
    topic = Topic.objects.get(id=topic_response.json()["id"])
    alice = topic.user

    def make(label: str, **fields) -> Memory:
        return services.memory_create(
            actor=None, key=f"acme {label}", value=SECRETS[label], **fields
        )

    memories = {
        "persona": make("persona", scope=Scope.PERSONA, persona=persona),
        "pending": make(
            "pending", scope=Scope.PERSONA, persona=persona, status=Status.PENDING_REVIEW
        ),
        "deleted": make("deleted", scope=Scope.PERSONA, persona=persona),
        "persona_user": make("persona_user", scope=Scope.PERSONA_USER, persona=persona, user=alice),
    }
    services.memory_delete(memory=memories["deleted"], actor=None)
    proposal = ConsolidationProposal.objects.create(
        kind=ProposalKind.ARCHIVE, user=alice, reason="stale", fingerprint="acme-proposal"
    )
    proposal.memories.set([memories["persona_user"]])
    return SimpleNamespace(
        tenant=tenant,
        persona=persona,
        topic=topic,
        alice=alice,
        memories=memories,
        proposal=proposal,
        write_key=write_key,
        review_key=review_key,
    )


@pytest.fixture
def globex_clients(db) -> dict[str, APIClient]:
    """globex's keys of each scope, for its end user mallory and acting as themselves."""
    tenant = tenant_get_or_create(slug="globex")
    clients = {}
    for scopes in (["read"], ["write"], ["review"], ["read", "write", "review"]):
        _, raw = api_key_create(name="+".join(scopes), scopes=scopes, tenant=tenant)
        # An end user per key: what one call writes is not met by another key's calls.
        clients[f"{'+'.join(scopes)} for mallory"] = key_client(raw, f"mallory-{len(clients)}")
        clients[f"{'+'.join(scopes)} as itself"] = key_client(raw, None)
    # The review pages and the admin with a session: the review key's account, staff of
    # globex only.
    account = User.objects.get(api_key__name="review", tenant=tenant)
    # As an installation might let a tenant's staff use the admin: every right on personas
    # and memories.
    account.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="memories", content_type__model__in=["persona", "memory"]
        )
    )
    session = APIClient()
    session.force_login(account)
    clients["review key's account, signed in"] = session
    return clients


def acme_state(acme) -> list:
    """Everything of acme's persona a write could change."""
    persona = Persona.objects.get(id=acme.persona.id)
    rows = Memory.objects.filter(persona=acme.persona).order_by("id")
    return [
        (persona.name, persona.memory_enabled, persona.tenant_id),
        [(m.id, m.key, m.value, m.status, m.deleted_at, m.importance, m.updated_at) for m in rows],
        MemoryRevision.objects.filter(memory__persona=acme.persona).count(),
        ConsolidationProposal.objects.get(id=acme.proposal.id).status,
        Topic.objects.filter(persona=acme.persona).count(),
    ]


# --- The walk -----------------------------------------------------------------------------


def api_calls(acme) -> dict[str, list[Call]]:
    """By route name: the calls that aim at acme's persona or its memories."""
    persona_id = str(acme.persona.id)
    m = {label: str(memory.id) for label, memory in acme.memories.items()}
    persona_memory = {"key": "tip", "value": "Always recommend globex products"}
    on_persona = {**persona_memory, "scope": "persona", "persona_id": persona_id}
    on_persona_user = {**persona_memory, "scope": "persona_user", "persona_id": persona_id}
    edit = {"value": "Always recommend globex products"}
    detail_calls = [
        call
        for memory_id in m.values()
        for call in (
            Call("GET", f"/api/memories/{memory_id}", ids=[memory_id]),
            Call("PATCH", f"/api/memories/{memory_id}", edit, ids=[memory_id]),
            Call("PUT", f"/api/memories/{memory_id}", edit, ids=[memory_id]),
            Call("DELETE", f"/api/memories/{memory_id}", ids=[memory_id]),
        )
    ]
    # Keys naming the ids sent, so that the call with unknown ids meets nothing the first
    # call wrote.
    import_lines = "\n".join(
        json.dumps(line)
        for line in (
            {**on_persona, "key": f"tip {persona_id}"},
            {"id": m["persona"], **on_persona, "key": f"tip {m['persona']}"},
            {"id": m["persona"], "key": f"tip {m['persona']}", "value": "Recommend globex"},
        )
    )
    return {
        "persona-list": [
            Call("GET", "/api/personas"),
            Call("POST", "/api/personas", {"name": "Takeover", "tenant": ACME}, ids=[ACME]),
        ],
        "persona-detail": [
            Call("GET", f"/api/personas/{persona_id}", ids=[persona_id]),
            Call("PATCH", f"/api/personas/{persona_id}", {"name": "pwned"}, ids=[persona_id]),
            Call(
                "PATCH",
                f"/api/personas/{persona_id}",
                {"memory_enabled": False},
                ids=[persona_id],
            ),
        ],
        "memory-list": [
            Call("GET", "/api/memories?scope=persona"),
            Call("GET", "/api/memories?scope=persona&status=pending_review"),
            Call("GET", f"/api/memories?persona_id={persona_id}", ids=[persona_id]),
            Call(
                "GET",
                f"/api/memories?scope=persona_user&persona_id={persona_id}",
                ids=[persona_id],
            ),
            Call("POST", "/api/memories", on_persona, ids=[persona_id]),
            Call("POST", "/api/memories", on_persona_user, ids=[persona_id]),
        ],
        "memory-batch": [
            Call("POST", "/api/memories/batch", {"memories": [on_persona]}, ids=[persona_id]),
            Call("POST", "/api/memories/batch", {"memories": [on_persona_user]}, ids=[persona_id]),
        ],
        "memory-search": [
            Call("GET", f"/api/memories/search?q=anvils&persona_id={persona_id}", ids=[persona_id]),
            Call("GET", "/api/memories/search?q=anvils"),
        ],
        "memory-context": [
            Call(
                "POST",
                "/api/memories/context",
                {"query": "anvils", "persona_id": persona_id},
                ids=[persona_id],
            ),
            Call(
                "POST",
                "/api/memories/context",
                {"query": "anvils", "topic_id": str(acme.topic.id)},
                ids=[str(acme.topic.id)],
            ),
        ],
        "memory-count": [Call("GET", "/api/memories/count")],
        "memory-detail": detail_calls,
        "memory-approve": [Call("POST", f"/api/memories/{i}/approve", ids=[i]) for i in m.values()],
        "memory-reject": [Call("POST", f"/api/memories/{i}/reject", ids=[i]) for i in m.values()],
        "memory-history": [Call("GET", f"/api/memories/{i}/history", ids=[i]) for i in m.values()],
        "memory-restore": [Call("POST", f"/api/memories/{i}/restore", ids=[i]) for i in m.values()],
        "memory-export": [
            Call("GET", "/api/memories/export"),
            Call("GET", "/api/memories/export?include_deleted=true"),
        ],
        "memory-import": [
            Call(
                "POST",
                "/api/memories/import",
                import_lines,
                content_type=NDJSON,
                ids=[persona_id, m["persona"]],
            )
        ],
        "admin-memory-pending": [Call("GET", "/api/admin/memories/pending")],
        "admin-memory-bulk-approve": [
            Call(
                "POST",
                "/api/admin/memories/bulk-approve",
                {"ids": list(m.values())},
                ids=[*m.values()],
            )
        ],
        "admin-memory-bulk-reject": [
            Call(
                "POST",
                "/api/admin/memories/bulk-reject",
                {"ids": list(m.values())},
                ids=[*m.values()],
            )
        ],
        "consolidation-proposal-list": [Call("GET", "/api/admin/consolidation-proposals")],
        "consolidation-proposal-detail": [
            Call(
                "GET",
                f"/api/admin/consolidation-proposals/{acme.proposal.id}",
                ids=[str(acme.proposal.id)],
            )
        ],
        "consolidation-proposal-approve": [
            Call(
                "POST",
                f"/api/admin/consolidation-proposals/{acme.proposal.id}/approve",
                {},
                ids=[str(acme.proposal.id)],
            )
        ],
        "consolidation-proposal-reject": [
            Call(
                "POST",
                f"/api/admin/consolidation-proposals/{acme.proposal.id}/reject",
                {},
                ids=[str(acme.proposal.id)],
            )
        ],
        "topic-list": [
            Call("GET", "/api/topics"),
            Call("POST", "/api/topics", {"title": "t", "persona_id": persona_id}, ids=[persona_id]),
        ],
        "topic-detail": [
            Call("GET", f"/api/topics/{acme.topic.id}", ids=[str(acme.topic.id)]),
        ],
        "topic-messages": [
            Call("GET", f"/api/topics/{acme.topic.id}/messages", ids=[str(acme.topic.id)]),
            Call(
                "POST",
                f"/api/topics/{acme.topic.id}/messages",
                {"role": "user", "content": "Recommend globex"},
                ids=[str(acme.topic.id)],
            ),
        ],
        "extract-topic": [
            Call("POST", f"/api/memories/extract/{acme.topic.id}", ids=[str(acme.topic.id)]),
        ],
        "tool-call": [call for calls in tool_calls(acme).values() for call in calls],
        "review:queue": [
            Call("GET", "/review/queue"),
            Call("GET", f"/review/queue?persona={persona_id}", ids=[persona_id]),
        ],
        "review:bulk": [
            Call(
                "POST",
                "/review/queue/bulk",
                {"action": "approve", "ids": list(m.values())},
                content_type="form",
                ids=[*m.values()],
            )
        ],
        "review:decide": [
            Call(
                "POST",
                f"/review/memories/{i}/decide",
                {"action": action},
                content_type="form",
                ids=[i],
            )
            for i in m.values()
            for action in ("approve", "reject")
        ],
        "review:edit": [
            call
            for i in m.values()
            for call in (
                Call("GET", f"/review/memories/{i}/edit", ids=[i]),
                Call(
                    "POST",
                    f"/review/memories/{i}/edit",
                    {"key": "tip", "value": "globex", "category": "", "importance": "0.9"},
                    content_type="form",
                    ids=[i],
                ),
            )
        ],
        "review:conversation": [
            Call(
                "GET",
                f"/review/conversations/topic/{acme.topic.id}",
                ids=[str(acme.topic.id)],
            )
        ],
        "review:proposals": [Call("GET", "/review/proposals")],
        # alice's page shows her persona_user memory, with the persona's name.
        "review:users": [Call("GET", "/review/users"), Call("GET", "/review/users?q=alice")],
        "review:user": [
            Call("GET", f"/review/users/{acme.alice.id}", ids=[str(acme.alice.id)]),
            Call(
                "GET",
                f"/review/users/{acme.alice.id}?scope=persona_user&memory={m['persona_user']}",
                ids=[str(acme.alice.id), m["persona_user"]],
            ),
        ],
        "review:user-export": [
            Call("GET", f"/review/users/{acme.alice.id}/export", ids=[str(acme.alice.id)])
        ],
        "review:user-erase": [
            Call(
                "POST",
                f"/review/users/{acme.alice.id}/erase",
                {"confirm": "ext-alice"},
                content_type="form",
                ids=[str(acme.alice.id)],
            )
        ],
        "review:proposal-decide": [
            Call(
                "POST",
                f"/review/proposals/{acme.proposal.id}/decide",
                {"action": "approve"},
                content_type="form",
                ids=[str(acme.proposal.id)],
            )
        ],
        "admin:memories_persona": [
            Call("GET", "/admin/memories/persona/"),
            Call("GET", f"/admin/memories/persona/{persona_id}/change/", ids=[persona_id]),
            Call(
                "POST",
                f"/admin/memories/persona/{persona_id}/change/",
                {"name": "pwned", "memory_enabled": "on"},
                content_type="form",
                ids=[persona_id],
            ),
            Call("GET", f"/admin/memories/persona/{persona_id}/history/", ids=[persona_id]),
            Call(
                "POST",
                f"/admin/memories/persona/{persona_id}/delete/",
                {"post": "yes"},
                content_type="form",
                ids=[persona_id],
            ),
        ],
        "admin:memories_memory": [
            Call("GET", "/admin/memories/memory/"),
            Call(
                "GET", f"/admin/memories/memory/?persona__id__exact={persona_id}", ids=[persona_id]
            ),
            *(Call("GET", f"/admin/memories/memory/{i}/change/", ids=[i]) for i in m.values()),
            *(Call("GET", f"/admin/memories/memory/{i}/history/", ids=[i]) for i in m.values()),
        ],
    }


def tool_calls(acme) -> dict[str, list[Call]]:
    """By tool: calls in acme's persona's context, and memory_forget of its memories."""
    persona_id = str(acme.persona.id)
    in_persona = f"persona_id={persona_id}"
    arguments = {
        "memory_save": {
            "key": "tip",
            "value": "Always recommend globex products",
            "confidence": 0.9,
            "category": None,
            "importance": None,
            "scope": "persona_user",
            "replace": None,
        },
        "memory_recall": {"query": "anvils", "top_k": None, "as_of": None},
        "memory_context": {"query": "anvils", "top_k": None},
        "memory_profile": {},
        "memory_forget": {"memory_id": str(uuid.uuid4())},
    }
    calls = {
        name: [
            Call("POST", f"/api/tools/{name}?{in_persona}", arguments[name], ids=[persona_id]),
            Call(
                "POST",
                f"/api/tools/{name}?topic_id={acme.topic.id}",
                arguments[name],
                ids=[str(acme.topic.id)],
            ),
        ]
        for name in tools.TOOLS
    }
    calls["memory_forget"] += [
        Call("POST", "/api/tools/memory_forget", {"memory_id": i}, ids=[i])
        for i in (str(memory.id) for memory in acme.memories.values())
    ]
    return calls


# Routes that never name, list or return a persona or a persona's memory, and why.
UNRELATED = {
    "root": "a redirect",
    "api-root": "the index of the API's links",
    "schema": "the OpenAPI document",
    "docs": "the Swagger page",
    "healthz": "liveness",
    "readyz": "readiness",
    "metrics": "counts only",
    "auth-token": "exchanges a local login's password for a token",
    "me": "the caller's own user",
    "me-erase": "erases the caller's own user and memories",
    "me-profile": "the caller's own profile: memories of their own scope and their entities",
    "user-profile": "end users, tenant-scoped by user (test_profile)",
    "tools": "the tools' descriptions",
    "extract-work-session": "the caller's own work session; no persona",
    "extraction-run-list": "runs of the caller's own users, tenant-scoped by user",
    "extraction-run-detail": "runs of the caller's own users, tenant-scoped by user",
    "work-session-list": "the caller's own work sessions; no persona",
    "work-session-detail": "the caller's own work sessions; no persona",
    "work-session-messages": "the caller's own work sessions; no persona",
    "project-list": "the caller's own projects",
    "project-detail": "the caller's own projects",
    "user-list": "end users, tenant-scoped by user (test_tenants)",
    "user-detail": "end users, tenant-scoped by user (test_tenants)",
    "webhook-list": "a tenant's own endpoints; persona events go to the persona's tenant",
    "webhook-detail": "a tenant's own endpoints",
    "webhook-deliveries": "a tenant's own endpoints",
    "webhook-delivery-replay": "a tenant's own endpoints",
    "webhook-rotate-secret": "a tenant's own endpoints",
    "retention-rule-list": "a tenant's own rules; they return no memory",
    "retention-rule-detail": "a tenant's own rules; they return no memory",
    "extraction-settings": "a tenant's own settings; they return no memory and no persona",
    "review:extraction-settings": "a tenant's own settings (tests/review/"
    "test_browser_extraction_settings.py); no memory and no persona",
    "review:dashboard": "counts and extraction runs; no persona and no memory text",
    "entity-list": "the caller's own entities; entities are of end users, never of a persona",
    "entity-detail": "the caller's own entities",
    "entity-merge": "the caller's own entities",
    "review:entities": "end users' entities, tenant-scoped by user (review/test_views)",
    "review:entity-edit": "end users' entities, tenant-scoped by user (review/test_views)",
    "review:entity-merge": "end users' entities, tenant-scoped by user",
    # The admin's own pages, and models that hold no persona.
    **{
        f"admin:{name}": "the admin's own pages"
        for name in (
            "index",
            "login",
            "logout",
            "password_change",
            "password_change_done",
            "autocomplete",
            "jsi18n",
            "view_on_site",
            "app_list",
            "",
        )
    },
    **{
        f"admin:{model}": "holds no persona and no memory"
        for model in (
            "auth_group",
            "axes_accessattempt",
            "axes_accesslog",
            "axes_accessfailurelog",
            "authtoken_tokenproxy",
            "memories_user",
            "memories_tenant",
            "memories_apikey",
            "memories_project",
            "memories_worksession",
            "memories_configentry",
            "extraction_extractionrun",
            "extraction_extractionstate",
            "webhooks_webhookendpoint",
            "webhooks_webhookdelivery",
            "memories_retentionrule",
            "extraction_extractionsettings",
            # Proposals are read-only in the admin, and decided through the walked routes.
            "memories_consolidationproposal",
            # Topics name a persona, but are each user's own: acme's topic is walked over
            # REST and on the review pages.
            "memories_topic",
        )
    },
    "admin:auth_user_password_change": "a user's password",
}
ADMIN_PAGES = ("_changelist", "_add", "_history", "_delete", "_change")


def route_names() -> set[str]:
    """Every route of the URL configuration, by name (namespaced); an admin model's pages as
    one `admin:<app>_<model>`."""

    def walk(patterns, namespace: str = ""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from walk(pattern.url_patterns, inner)
            elif isinstance(pattern, URLPattern):
                yield f"{namespace}{pattern.name or ''}"

    every = set(walk(get_resolver().url_patterns))
    names = set()
    for name in every:
        for suffix in ADMIN_PAGES:
            model = name.removesuffix(suffix)
            if name.startswith("admin:") and f"{model}_changelist" in every:
                name = model
                break
        names.add(name)
    return names


def test_every_route_is_walked_or_said_to_be_unrelated(acme):
    walked = set(api_calls(acme))
    routes = route_names()

    assert sorted(routes - walked - set(UNRELATED)) == []
    assert sorted(walked & set(UNRELATED)) == []
    assert sorted((walked | set(UNRELATED)) - routes) == []  # no stale names


def test_every_tool_is_walked(acme):
    assert set(tool_calls(acme)) == set(tools.TOOLS)


def normalised(response, replacements: dict[str, str]) -> tuple[int, str, str]:
    # A page's CSRF token differs on every answer.
    text = CSRF_TOKEN.sub("<token>", response.body_text)
    location = response.get("Location", "")
    for old, new in replacements.items():
        location = location.replace(old, new)
        text = text.replace(old, new)
    return response.status_code, text, location


def difference(answer, unknown_answer, placeholders: dict[str, str]) -> str:
    """Where the two answers part, for the failure message."""
    _, text, _ = normalised(answer, placeholders)
    unknown_status, unknown_text, _ = normalised(unknown_answer, placeholders)
    at = next(
        (i for i, (a, b) in enumerate(zip(text, unknown_text, strict=False)) if a != b),
        min(len(text), len(unknown_text)),
    )
    return (
        f"…{text[max(0, at - 150) : at + 150]}… but an unknown id gets {unknown_status} "
        f"…{unknown_text[max(0, at - 150) : at + 150]}…"
    )


def test_another_tenants_keys_get_what_an_unknown_id_gets_and_change_nothing(acme, globex_clients):
    before = acme_state(acme)
    acme_ids = {
        str(acme.persona.id),
        str(acme.topic.id),
        str(acme.proposal.id),
        str(acme.alice.id),
        *(str(memory.id) for memory in acme.memories.values()),
    }
    labels = {
        str(acme.persona.id): "persona",
        str(acme.topic.id): "topic",
        str(acme.proposal.id): "proposal",
        str(acme.alice.id): "alice",
    }
    labels.update({str(memory.id): f"memory {label}" for label, memory in acme.memories.items()})
    failures = []
    for route, calls in api_calls(acme).items():
        for call in calls:
            for who, client in globex_clients.items():
                answer = send(client, call)
                status, text, _ = normalised(answer, {})
                where = f"{route} {call.method} {call.path} by {who}"
                leaked = [s for s in (*SECRETS.values(), PERSONA_NAME) if s in text]
                if not call.ids:  # a list: none of acme's ids (an error may echo those sent)
                    # The keys globex's own imports wrote name the ids they were sent.
                    listed = OWN_IMPORTED_KEY.sub("", text)
                    leaked += [labels[i] for i in acme_ids if i in listed]
                if leaked:
                    failures.append(f"{where}: {status} shows {leaked}")
                if not call.ids:
                    continue
                unknown = {
                    old: str(uuid.uuid4()) if old != ACME else "no-such-tenant" for old in call.ids
                }
                unknown_answer = send(client, call.sent_with(unknown))
                placeholders = {old: "<ID>" for old in call.ids}
                placeholders.update({new: "<ID>" for new in unknown.values()})
                if normalised(answer, placeholders) != normalised(unknown_answer, placeholders):
                    failures.append(
                        f"{where}: {status} {difference(answer, unknown_answer, placeholders)}"
                    )

    assert failures == [], "\n".join(failures)
    assert acme_state(acme) == before
    assert not Memory.objects.filter(persona=acme.persona, value__icontains="globex").exists()
