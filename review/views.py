"""Staff review pages: the pending queue (per-card and bulk approve/reject, filters, the
messages each candidate was extracted from), edit-then-approve, the conversation a candidate
came from, consolidation proposals, the users' entities (rename, merge), the extraction
settings of a tenant or project, and a dashboard.
Every change goes through memories' services, so it is revisioned and indexed."""

import functools
import json
import uuid
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from memories import consolidation, selectors, services
from memories.entities.linking import entities_merge, entity_rename
from memories.errors import ServiceError
from memories.models import (
    DEFAULT_TENANT_SLUG,
    Entity,
    Memory,
    Project,
    ProposalKind,
    Status,
    Tenant,
    Topic,
    WorkSession,
)
from review import dashboard_charts
from review import selectors as review_selectors
from review.forms import (
    BulkActionForm,
    EntityEditForm,
    EntityMergeForm,
    ExtractionSettingsForm,
    MemoryEditForm,
    ProposalDecisionForm,
    ProposalFilterForm,
    QueueFilterForm,
)

PAGE_SIZE = 25
RECENT_RUNS = 15
RECENT_FAILURES = 10
CONVERSATION_MESSAGES = 200


def pluralize_memories(count: int) -> str:
    return "memory" if count == 1 else "memories"


def staff_required(view):
    """Anonymous visitors go to the login page; signed-in non-staff are refused (403)."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("Review pages are for staff.")
        return view(request, *args, **kwargs)

    return wrapper


# The charts' windows: the last N days (UTC), today included; ?days= picks one.
DASHBOARD_DAYS = (7, 30, 90)
DASHBOARD_DEFAULT_DAYS = 30


@staff_required
def dashboard(request):
    """Memory counts, the last day's extractions (skipped runs are not extractions: they read
    nothing and call no model, so they are counted apart), the last runs and the last day's
    failures with their errors, and the consolidation proposals waiting: of the users and
    personas the signed-in staff administers (a review key's account: its tenant's). Then
    charts of the last ?days= days (7, 30 or 90; 30 by default): memories created, replaced
    and archived, extraction runs by outcome, searches and context calls with their p50 and
    p95, per day; and the review queue's age."""
    since = timezone.now() - timedelta(days=1)
    actor = request.user
    days = {str(n): n for n in DASHBOARD_DAYS}.get(
        request.GET.get("days", ""), DASHBOARD_DEFAULT_DAYS
    )
    return render(
        request,
        "review/dashboard.html",
        {
            "runs": review_selectors.extraction_run_counts(actor=actor, since=since),
            "counts": selectors.memory_status_counts(actor=actor),
            "recent_runs": review_selectors.recent_extraction_runs(actor=actor, limit=RECENT_RUNS),
            "recent_failures": review_selectors.failed_extraction_runs(
                actor=actor, since=since, limit=RECENT_FAILURES
            ),
            "proposals_pending": review_selectors.pending_proposal_count(actor=actor),
            "days": days,
            "day_choices": DASHBOARD_DAYS,
            "charts": dashboard_charts.dashboard_charts(actor=actor, days=days),
        },
    )


@staff_required
def queue(request):
    filters = QueueFilterForm(request.GET or None, actor=request.user)
    chosen = {}
    if request.GET:
        filters.is_valid()  # invalid fields drop out of cleaned_data; the rest still apply
        chosen = filters.cleaned_data
    pending = review_selectors.queue_memories(actor=request.user, filters=chosen)
    page = Paginator(pending, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    similar = selectors.similar_memories(rows)
    cited = selectors.cited_messages(rows)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "review/queue.html",
        {
            "page": page,
            "rows": [
                (memory, similar.get(memory.id, []), cited.get(memory.id, [])) for memory in rows
            ],
            "filters": filters,
            "filter_query": query.urlencode(),
            "next_url": request.get_full_path(),
        },
    )


def _safe_next(target: str | None) -> str:
    """Only our own review pages are followed after a form (no open redirect)."""
    return target if target and target.startswith("/review/") else reverse("review:queue")


def _back(request):
    return redirect(_safe_next(request.POST.get("next")))


@staff_required
@require_POST
def bulk(request):
    form = BulkActionForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Select at least one memory, then approve or reject.")
        return _back(request)
    ids, action = form.cleaned_data["ids"], form.cleaned_data["action"]
    # Another tenant's memories are skipped as unknown ids are (told as "no longer pending").
    administered = review_selectors.administered_ids(actor=request.user, memory_ids=ids)
    changed = len(
        services.memory_review(memory_ids=administered, actor=request.user, decision=action)
    )
    verb = "Approved" if action == "approve" else "Rejected"
    text = f"{verb} {changed} {pluralize_memories(changed)}."
    if changed < len(ids):
        left = len(ids) - changed
        text += (
            f" {left} {'was' if left == 1 else 'were'} no longer pending and "
            f"{'was' if left == 1 else 'were'} left as {'it is' if left == 1 else 'they are'}."
        )
    messages.success(request, text)
    return _back(request)


@staff_required
@require_POST
def decide(request, memory_id):
    """Approve or reject one candidate (the buttons on its card)."""
    action = request.POST.get("action")
    if action not in ("approve", "reject"):
        messages.error(request, "Approve or reject: nothing else can be done here.")
        return _back(request)
    if not review_selectors.administered_ids(actor=request.user, memory_ids=[memory_id]):
        raise Http404("No such memory.")
    try:
        [memory] = services.memory_review(
            memory_ids=[memory_id], actor=request.user, decision=action, require_pending=True
        )
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        verb = "Approved" if action == "approve" else "Rejected"
        messages.success(request, f"{verb} “{memory.key}”.")
    return _back(request)


@staff_required
@require_http_methods(["GET", "POST"])
def edit(request, memory_id):
    memory = review_selectors.memory_to_edit(actor=request.user, memory_id=memory_id)
    if memory is None:
        raise Http404("No such memory.")
    if request.method == "POST":
        form = MemoryEditForm(request.POST, current_expires_at=memory.expires_at)
        if form.is_valid() and memory.status == Status.PENDING_REVIEW:
            approve = bool(request.POST.get("approve"))
            try:
                services.memory_update(
                    memory=memory, actor=request.user, changes=form.cleaned_data, approve=approve
                )
                done = "Saved and approved" if approve else "Saved"
                messages.success(request, f"{done} “{form.cleaned_data['key']}”.")
                return _back(request)
            except ServiceError as exc:
                messages.error(request, exc.detail)
        elif memory.status != Status.PENDING_REVIEW:
            messages.error(request, f"This memory is {memory.status} now, not pending.")
            return _back(request)
    else:
        form = MemoryEditForm(
            initial={
                "key": memory.key,
                "value": memory.value,
                "category": memory.category,
                "importance": memory.importance,
                "pinned": memory.pinned,
                "expires_at": memory.expires_at,
            },
            current_expires_at=memory.expires_at,
        )
    similar = selectors.similar_memories([memory]).get(memory.id, [])
    return render(
        request,
        "review/edit.html",
        {
            "memory": memory,
            "form": form,
            "similar": similar,
            "cited": selectors.cited_messages([memory]).get(memory.id, []),
            "next_url": _safe_next(request.GET.get("next") or request.POST.get("next")),
            # The product's own keys, shown as they are stored; the form does not edit them.
            "metadata_json": (
                json.dumps(memory.metadata, indent=2, ensure_ascii=False, sort_keys=True)
                if memory.metadata
                else ""
            ),
        },
    )


def _memory_of(source: Topic | WorkSession, memory_id: str) -> Memory | None:
    """The memory named by ?memory=, if it was extracted from `source`."""
    try:
        parsed_id = uuid.UUID(memory_id)
    except ValueError:
        return None
    return review_selectors.memory_from_source(source, parsed_id)


@staff_required
def conversation(request, kind: str, source_id):
    """A conversation (topic) or work session as extraction read it, with the messages a
    memory (?memory=<id>) was extracted from marked: the first of them and the messages around
    it, or, without any, the last messages before the memory was made."""
    source = review_selectors.conversation_source(
        actor=request.user, kind=kind, source_id=source_id
    )
    if source is None:
        raise Http404("No such conversation.")
    memory = _memory_of(source, request.GET.get("memory", ""))
    cited = set(memory.source_message_ids) if memory else set()
    shown = review_selectors.conversation_window(source, memory=memory, limit=CONVERSATION_MESSAGES)
    return render(
        request,
        "review/conversation.html",
        {
            "source": source,
            "kind": "conversation" if kind == "topic" else "work session",
            "memory": memory,
            "rows": [(message, message.id in cited) for message in shown],
            "total": review_selectors.conversation_message_count(source),
        },
    )


@staff_required
def proposals(request):
    """Pending consolidation proposals with the memories they merge or archive."""
    filters = ProposalFilterForm(request.GET or None)
    kind = (filters.cleaned_data.get("kind") or "") if filters.is_valid() else ""
    pending = review_selectors.pending_proposals(actor=request.user, kind=kind)
    page = Paginator(pending, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "review/proposals.html",
        {
            "page": page,
            "proposals": list(page.object_list),
            "filters": filters,
            "filter_query": query.urlencode(),
            "next_url": request.get_full_path(),
            "merge": ProposalKind.MERGE,
        },
    )


@staff_required
@require_POST
def proposal_decide(request, proposal_id):
    """Approve (a merge with the text as the reviewer left it) or reject one proposal."""
    form = ProposalDecisionForm(request.POST)
    back = redirect(_safe_next(request.POST.get("next") or reverse("review:proposals")))
    if not form.is_valid():
        problems = "; ".join(f"{name}: {' '.join(e)}" for name, e in form.errors.items())
        messages.error(request, f"Nothing was changed: {problems}")
        return back
    action = form.cleaned_data["action"]
    text = {}
    if action == "approve":
        text = {name: form.cleaned_data[name] or None for name in ("key", "value")}
    try:
        proposal = consolidation.proposal_decide(
            proposal_id=proposal_id, actor=request.user, decision=action, **text
        )
    except ServiceError as exc:
        messages.error(request, exc.detail)
    else:
        done = {"approve": "Approved", "reject": "Rejected"}[action]
        what = "merge" if proposal.kind == ProposalKind.MERGE else "archival"
        count = len(proposal.memories.all())
        messages.success(request, f"{done} the {what} of {count} {pluralize_memories(count)}.")
    return back


@staff_required
def entities(request):
    """The entities of the users the reviewer administers (?user= one of them), each with
    its memories, a rename form and a merge into another entity of the same user."""
    user_id = request.GET.get("user") or None
    try:
        chosen = uuid.UUID(user_id) if user_id else None
    except ValueError:
        raise Http404("No such user.") from None
    listed = list(review_selectors.entities_of_users(actor=request.user, user_id=chosen))
    by_user: dict = {}
    for entity in listed:
        by_user.setdefault(entity.user_id, []).append(entity)
    return render(
        request,
        "review/entities.html",
        {
            "entities": [
                (
                    entity,
                    # Prefixed: one form per entity on the page, each with ids of its own.
                    EntityEditForm(initial=_entity_initial(entity), prefix=str(entity.id)),
                    by_user[entity.user_id],
                )
                for entity in listed
            ],
            "next_url": request.get_full_path(),
        },
    )


def _entity_initial(entity: Entity) -> dict:
    return {
        "name": entity.name,
        "relation": entity.relation,
        "kind": entity.kind,
        "aliases": "\n".join(entity.aliases),
    }


def _administered_entity(request, entity_id) -> Entity:
    entity = review_selectors.entities_of_users(actor=request.user).filter(id=entity_id).first()
    if entity is None:
        raise Http404("No such entity.")
    return entity


@staff_required
@require_POST
def entity_edit(request, entity_id):
    entity = _administered_entity(request, entity_id)
    form = EntityEditForm(request.POST, prefix=str(entity.id))
    if form.is_valid():
        entity_rename(entity, changes=form.cleaned_data)
        messages.success(request, f"Saved “{entity.name}”.")
    else:
        problems = "; ".join(f"{name}: {' '.join(e)}" for name, e in form.errors.items())
        messages.error(request, f"Nothing was changed: {problems}")
    return redirect(_safe_next(request.POST.get("next") or reverse("review:entities")))


@staff_required
@require_POST
def entity_merge(request, entity_id):
    keep = _administered_entity(request, entity_id)
    form = EntityMergeForm(request.POST)
    other = (
        Entity.objects.filter(id=form.cleaned_data["other"], user_id=keep.user_id).first()
        if form.is_valid()
        else None
    )
    if other is None:
        messages.error(request, "Choose another entity of the same user to merge.")
    else:
        try:
            entities_merge(keep=keep, others=[other])
            messages.success(request, f"Merged “{other.name}” into “{keep.name}”.")
        except ServiceError as exc:
            messages.error(request, exc.detail)
    return redirect(_safe_next(request.POST.get("next") or reverse("review:entities")))


PROJECTS_LISTED = 500


@staff_required
@require_http_methods(["GET", "POST"])
def extraction_settings(request):
    """The extraction settings of a tenant (?tenant=<slug>; a staff login of a tenant has its
    own only) or of one of its projects (?project=<id>), and what is in force for it."""
    from extraction import steering
    from extraction.models import ExtractionSettings
    from extraction.settings_api import ExtractionSettingsSerializer

    tenants = Tenant.objects.order_by("slug")
    if request.user.tenant_id is not None:
        tenants = tenants.filter(id=request.user.tenant_id)
    tenant = (
        tenants.filter(slug=request.GET.get("tenant") or DEFAULT_TENANT_SLUG).first()
        or tenants.first()
    )
    if tenant is None:
        raise Http404("No tenant yet.")
    projects = Project.objects.filter(owner__tenant=tenant).order_by("name", "id")
    project = None
    if request.GET.get("project"):
        try:
            project = projects.filter(id=uuid.UUID(request.GET["project"])).first()
        except ValueError:
            project = None
        if project is None:
            raise Http404("No such project of this tenant.")
    row = ExtractionSettings.objects.filter(tenant=tenant, project=project).first()
    if request.method == "POST":
        form = ExtractionSettingsForm(request.POST)
        serializer = ExtractionSettingsSerializer(data=form.as_api() if form.is_valid() else {})
        if form.is_valid() and serializer.is_valid():
            steering.settings_save(
                tenant=tenant, project=project, fields=dict(serializer.validated_data)
            )
            messages.success(request, "Saved the extraction settings.")
            return redirect(request.get_full_path())
        problems = {**form.errors, **(serializer.errors if form.is_valid() else {})}
        messages.error(
            request,
            "Nothing was changed: "
            + "; ".join(
                f"{name}: {' '.join(map(str, errors))}" for name, errors in problems.items()
            ),
        )
    else:
        form = ExtractionSettingsForm(
            initial=ExtractionSettingsForm.initial_of(row, tenant_level=project is None)
        )
    effective = steering.steering_for(
        tenant_id=tenant.id, project_id=project.id if project else None
    )
    return render(
        request,
        "review/extraction_settings.html",
        {
            "tenants": tenants,
            "tenant": tenant,
            "projects": projects[:PROJECTS_LISTED],
            "project": project,
            "form": form,
            "saved": row,
            "effective": effective,
            "effective_exclude": sorted(effective.exclude),
        },
    )
