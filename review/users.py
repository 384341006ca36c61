"""The review pages' users explorer: the users a reviewer administers (search, memory counts,
last activity), and a page per user with their memories by category, the timeline of changes
to them, an export and an erasure. Reads come from review.user_selectors; the export and the
erasure are the API's own (memories.api.portability, memories.erasure)."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memories.api.portability import export_response
from memories.erasure import user_erase
from memories.errors import ServiceError
from memories.models import User
from memories.portability.exporting import memories_for_export
from review import user_selectors
from review.playground import playground
from review.user_forms import EraseForm, UserMemoryFilterForm, UserSearchForm, erase_confirmation
from review.views import PAGE_SIZE, staff_required

# Memories a user page lists at once (grouped by category), and timeline entries it shows.
MEMORIES_PAGE_SIZE = 100
TIMELINE_LIMIT = 100


def _user_or_404(request, user_id) -> User:
    user = user_selectors.user_for_review(actor=request.user, user_id=user_id)
    if user is None:
        raise Http404("No such user.")
    return user


@staff_required
@require_GET
def users(request):
    """The users the reviewer administers, newest first, found by external id or username
    (?q=, any part, any case), with their memory counts and last activity."""
    search = UserSearchForm(request.GET or None)
    text = search.cleaned_data["q"] if search.is_valid() else ""
    listed = user_selectors.users_listed(actor=request.user, search=text)
    page = Paginator(listed, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "review/users.html",
        {
            "page": page,
            "rows": [(user, user_selectors.last_activity_at(user)) for user in page.object_list],
            "search": search,
            "q": text,
            "filter_query": query.urlencode(),
        },
    )


@staff_required
@require_GET
def user(request, user_id):
    """One user: their memories (the current ones by default) by category, then the timeline
    of changes to their memories (?memory=<id>: that memory's history), both narrowed by
    scope, project and topic; invalid filters are ignored, as the queue ignores them."""
    shown = _user_or_404(request, user_id)
    filters = UserMemoryFilterForm(request.GET or None, user=shown)
    chosen = {}
    if request.GET:
        filters.is_valid()  # invalid fields drop out of cleaned_data; the rest still apply
        chosen = filters.cleaned_data
    memories = user_selectors.user_memories(user=shown, filters=chosen)
    page = Paginator(memories, MEMORIES_PAGE_SIZE).get_page(request.GET.get("page"))
    shown_memories = list(page.object_list)
    history_of = chosen.get("memory")
    query = request.GET.copy()
    query.pop("page", None)
    without_memory = query.copy()
    without_memory.pop("memory", None)
    return render(
        request,
        "review/user.html",
        {
            "shown": shown,
            "page": page,
            "memories": shown_memories,
            "groups": user_selectors.grouped(shown_memories, chosen.get("group") or "category"),
            "filters": filters,
            "status": chosen.get("status") or user_selectors.CURRENT,
            "filter_query": query.urlencode(),
            "timeline_query": without_memory.urlencode(),
            "timeline": user_selectors.user_timeline(
                user=shown, filters=chosen, limit=TIMELINE_LIMIT, memory_id=history_of
            ),
            "timeline_limit": TIMELINE_LIMIT,
            "history_of": history_of,
            "confirmation": erase_confirmation(shown),
            "erasable": not (shown.is_staff or shown.is_superuser),
            **playground(request, shown),
        },
    )


@staff_required
@require_GET
def user_export(request, user_id):
    """The user's memories as GET /api/memories/export gives them to the user (every status,
    not the deleted ones), downloaded as NDJSON."""
    shown = _user_or_404(request, user_id)
    # With their user: each line names the user's external id, which would cost a query a
    # line otherwise (the API's export reads it from the caller, who is that user).
    memories = memories_for_export(user=shown).select_related("user")
    return export_response(memories, request=request, filename=f"memories-{shown.id}.ndjson")


@staff_required
@require_POST
def user_erase_view(request, user_id):
    """Erase the user and all their data, as DELETE /api/users/{id} does, once the reviewer
    typed their external id (a local login's username) again; anything else erases nothing.
    Staff, superuser and API key accounts are refused, as the API refuses them."""
    shown = _user_or_404(request, user_id)
    expected = erase_confirmation(shown)
    form = EraseForm(request.POST)
    if not form.is_valid() or form.cleaned_data["confirm"] != expected:
        messages.error(
            request, f"Nothing was erased: type “{expected}” exactly to erase this user."
        )
        return redirect(reverse("review:user", args=[shown.id]))
    try:
        user_erase(user=shown)
    except ServiceError as exc:
        messages.error(request, f"Nothing was erased: {exc.detail}")
        return redirect(reverse("review:user", args=[shown.id]))
    messages.success(request, f"Erased “{expected}” and all their data.")
    return redirect(reverse("review:users"))
