"""Staff review pages: the pending queue (per-card and bulk approve/reject, filters, the
messages each candidate was extracted from), edit-then-approve, the conversation a candidate
came from, consolidation proposals, and a dashboard. Every change goes through memories'
services, so it is revisioned and indexed."""

import functools
import uuid
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from extraction.models import ExtractionRun, RunStatus
from memories import consolidation, selectors, services
from memories.errors import ServiceError
from memories.models import (
    ConsolidationProposal,
    Memory,
    Message,
    ProposalKind,
    ProposalStatus,
    Status,
    Topic,
    WorkSession,
    WorkSessionMessage,
)
from review.forms import (
    AGES,
    BulkActionForm,
    MemoryEditForm,
    ProposalDecisionForm,
    ProposalFilterForm,
    QueueFilterForm,
)

PAGE_SIZE = 25
RECENT_RUNS = 15
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


@staff_required
def dashboard(request):
    """Memory counts, the last day's extractions (skipped runs are not extractions: they read
    nothing and call no model, so they are counted apart), the last runs and the last day's
    failures with their errors, and the consolidation proposals waiting."""
    since = timezone.now() - timedelta(days=1)
    runs = ExtractionRun.objects.filter(created_at__gte=since).aggregate(
        total=Count("id", filter=~Q(status=RunStatus.SKIPPED)),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        done=Count("id", filter=Q(status=RunStatus.DONE)),
        skipped=Count("id", filter=Q(status=RunStatus.SKIPPED)),
    )
    recent_runs = (
        ExtractionRun.objects.exclude(status=RunStatus.SKIPPED)
        .select_related("user")
        .order_by("-created_at", "-id")[:RECENT_RUNS]
    )
    recent_failures = (
        ExtractionRun.objects.filter(created_at__gte=since, status=RunStatus.FAILED)
        .select_related("user")
        .order_by("-created_at", "-id")[:10]
    )
    return render(
        request,
        "review/dashboard.html",
        {
            "counts": selectors.memory_status_counts(),
            "runs": runs,
            "recent_runs": recent_runs,
            "recent_failures": recent_failures,
            "proposals_pending": ConsolidationProposal.objects.filter(
                status=ProposalStatus.PENDING
            ).count(),
        },
    )


def _filtered(pending, filters: QueueFilterForm):
    filters.is_valid()  # invalid fields drop out of cleaned_data; the rest still apply
    data = filters.cleaned_data
    for name in ("user", "persona", "scope", "source", "category"):
        if data.get(name):
            pending = pending.filter(**{name: data[name]})
    for name in ("source_topic", "source_work_session"):
        if data.get(name):
            pending = pending.filter(**{f"{name}_id": data[name]})
    now = timezone.now()
    for value, _, newer_than, older_than in AGES:
        if data.get("age") == value:
            if newer_than:
                pending = pending.filter(created_at__gte=now - newer_than)
            if older_than:
                pending = pending.filter(created_at__lt=now - older_than)
    return pending


@staff_required
def queue(request):
    filters = QueueFilterForm(request.GET or None)
    pending = selectors.pending_memories(actor=request.user).select_related(
        "user", "persona", "project", "topic", "supersedes", "source_topic", "source_work_session"
    )
    if request.GET:
        pending = _filtered(pending, filters)
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
    changed = len(services.memory_review(memory_ids=ids, actor=request.user, decision=action))
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
    memory = (
        Memory.objects.select_related("source_topic", "source_work_session", "supersedes")
        .filter(id=memory_id, deleted_at__isnull=True)
        .first()
    )
    if memory is None:
        raise Http404("No such memory.")
    if request.method == "POST":
        form = MemoryEditForm(request.POST)
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
            }
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
        },
    )


def _memory_of(source: Topic | WorkSession, memory_id: str) -> Memory | None:
    """The memory named by ?memory=, if it was extracted from `source`."""
    try:
        parsed_id = uuid.UUID(memory_id)
    except ValueError:
        return None
    field = "source_topic" if isinstance(source, Topic) else "source_work_session"
    return Memory.objects.filter(id=parsed_id, **{field: source}).first()


@staff_required
def conversation(request, kind: str, source_id):
    """A conversation (topic) or work session as extraction read it, with the messages a
    memory (?memory=<id>) was extracted from marked: the first of them and the messages around
    it, or, without any, the last messages before the memory was made."""
    source: Topic | WorkSession | None
    if kind == "topic":
        source = Topic.objects.select_related("user").filter(id=source_id).first()
    elif kind == "work-session":
        source = WorkSession.objects.select_related("user", "project").filter(id=source_id).first()
    else:
        source = None
    if source is None:
        raise Http404("No such conversation.")
    memory = _memory_of(source, request.GET.get("memory", ""))
    cited = set(memory.source_message_ids) if memory else set()
    all_messages: QuerySet[Message | WorkSessionMessage] = source.messages.order_by("id")
    if cited:
        first = min(cited)
        before = list(all_messages.filter(id__lt=first).order_by("-id")[:10])[::-1]
        shown = before + list(all_messages.filter(id__gte=first)[:CONVERSATION_MESSAGES])
    elif memory is not None:
        made_before = all_messages.filter(created_at__lte=memory.created_at).order_by("-id")
        shown = list(made_before[:CONVERSATION_MESSAGES])[::-1]
    else:
        shown = list(all_messages.order_by("-id")[:CONVERSATION_MESSAGES])[::-1]
    return render(
        request,
        "review/conversation.html",
        {
            "source": source,
            "kind": "conversation" if kind == "topic" else "work session",
            "memory": memory,
            "rows": [(message, message.id in cited) for message in shown],
            "total": all_messages.count(),
        },
    )


@staff_required
def proposals(request):
    """Pending consolidation proposals with the memories they merge or archive."""
    filters = ProposalFilterForm(request.GET or None)
    pending = consolidation.proposals_for_review(actor=request.user).filter(
        status=ProposalStatus.PENDING
    )
    if filters.is_valid() and filters.cleaned_data.get("kind"):
        pending = pending.filter(kind=filters.cleaned_data["kind"])
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
