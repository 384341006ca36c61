"""Reads of extraction runs, already limited to what the caller may see: their own runs, and
every run for staff."""

from django.db.models import QuerySet

from extraction.models import ExtractionRun
from memories.errors import NotFound
from memories.models import User
from memories.selectors import administered_by


def runs_visible_to(user: User) -> QuerySet[ExtractionRun]:
    """The user's extraction runs (staff: those of every user they administer), newest
    first."""
    if user.is_staff:
        runs = ExtractionRun.objects.filter(administered_by(user, via="user__"))
    else:
        runs = ExtractionRun.objects.filter(user=user)
    return runs.order_by("-created_at", "-id")


def run_get(*, user: User, task_id: str) -> ExtractionRun:
    """One visible run by its task id. Someone else's answers NotFound, so its existence does
    not leak."""
    # PostgreSQL refuses a NUL in a string parameter; no task id holds one.
    run = None if "\x00" in task_id else runs_visible_to(user).filter(task_id=task_id).first()
    if run is None:
        raise NotFound(
            f"No extraction run with task_id {task_id[:100]!r}: task ids come from the answers of "
            "the extraction endpoints and of posted messages.",
            field="task_id",
        )
    return run
