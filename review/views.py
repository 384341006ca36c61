"""Staff review pages: the pending queue with bulk approve/reject, edit-then-approve, and a
dashboard. Every change goes through memories' services, so it is revisioned and indexed."""

import functools
from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from extraction.models import ExtractionRun, RunStatus
from memories import selectors, services
from memories.errors import ServiceError
from memories.models import Memory, Status
from review.forms import BulkActionForm, MemoryEditForm, QueueFilterForm

PAGE_SIZE = 25


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
    since = timezone.now() - timedelta(days=1)
    runs = ExtractionRun.objects.filter(created_at__gte=since).aggregate(
        total=Count("id"),
        failed=Count("id", filter=Q(status=RunStatus.FAILED)),
        done=Count("id", filter=Q(status=RunStatus.DONE)),
    )
    recent_failures = ExtractionRun.objects.filter(
        created_at__gte=since, status=RunStatus.FAILED
    ).order_by("-created_at")[:10]
    return render(
        request,
        "review/dashboard.html",
        {
            "counts": selectors.memory_status_counts(),
            "runs": runs,
            "recent_failures": recent_failures,
        },
    )


@staff_required
def queue(request):
    filters = QueueFilterForm(request.GET or None)
    pending = selectors.pending_memories().select_related(
        "user", "persona", "project", "topic", "supersedes"
    )
    if request.GET:
        filters.is_valid()  # invalid fields drop out of cleaned_data; the rest still apply
        for name in ("user", "persona", "scope", "source", "category"):
            if filters.cleaned_data.get(name):
                pending = pending.filter(**{name: filters.cleaned_data[name]})
    page = Paginator(pending, PAGE_SIZE).get_page(request.GET.get("page"))
    rows = list(page.object_list)
    similar = selectors.similar_memories(rows)
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "review/queue.html",
        {
            "page": page,
            "rows": [(memory, similar.get(memory.id, [])) for memory in rows],
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
@require_http_methods(["GET", "POST"])
def edit(request, memory_id):
    memory = Memory.objects.filter(id=memory_id, deleted_at__isnull=True).first()
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
            "next_url": _safe_next(request.GET.get("next") or request.POST.get("next")),
        },
    )
