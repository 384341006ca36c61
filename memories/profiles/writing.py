"""Write a user's profile summary (in the background: the sweep's task, never a request)."""

import logging

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework.fields import DateTimeField

from extraction import llm
from memories.models import Profile, SummaryWriter, User
from memories.profiles.contents import profile_contents, profile_fingerprint
from memories.profiles.summary import llm_summary, template_summary

logger = logging.getLogger(__name__)
API_TIME = DateTimeField()


def profile_write(user: User, *, force: bool = False) -> bool:
    """Write the summary of `user` from their current memories and entities, unless the
    summary already read exactly these (the same fingerprint, and the writer it should have:
    a template summary left by a failed LLM call is written again). True when written.

    With an LLM configured the LLM writes it; when the LLM fails after its retries the
    template writes it and `error` says why, so the profile shows it and the next change
    asks the LLM again."""
    # The fingerprint first (22 ms for a user with 100,000 memories on SQLite, against 200 ms
    # to read the rest): most users a sweep finds again, in its overlap, have not changed.
    fingerprint = profile_fingerprint(user.id)
    writer = SummaryWriter.LLM if llm.is_configured() else SummaryWriter.TEMPLATE
    existing = Profile.objects.filter(user=user).first()
    if (
        not force
        and existing is not None
        and existing.fingerprint == fingerprint
        and existing.written_by == writer
        and not existing.error
    ):
        return False
    # Only what the summary reads: the pinned memories and the most important others.
    contents = profile_contents(
        user, listed=settings.PROFILE_SUMMARY_MEMORIES, fingerprint=fingerprint
    )
    max_chars = settings.PROFILE_SUMMARY_MAX_CHARS
    error = ""
    if writer == SummaryWriter.LLM:
        try:
            summary = llm_summary(contents, max_chars=max_chars)
        except llm.ExtractionFailed as failure:
            logger.warning("profile of %s: the LLM failed: %s", user.id, failure.reason)
            error = f"The LLM did not write the summary ({failure.reason}); the template did."
            writer = SummaryWriter.TEMPLATE
            summary = template_summary(contents, max_chars=max_chars)
    else:
        summary = template_summary(contents, max_chars=max_chars)
    fields = {
        "summary": summary,
        "written_by": writer,
        "made_at": timezone.now(),
        "fingerprint": contents.fingerprint,
        "memories_read": [
            # Written as the API writes the memory's updated_at, so a client can compare them.
            {"id": str(memory.id), "updated_at": API_TIME.to_representation(memory.updated_at)}
            for memory in contents.summary_sources()
        ],
        "error": error[:300],
    }
    try:
        with transaction.atomic():
            Profile.objects.update_or_create(user=user, defaults=fields)
    except IntegrityError:
        # The user was erased while the summary was written (nothing to keep), or another
        # sweep made their profile first (it read what this one read, or later).
        return False
    return True
