"""When to extract: plain functions of counts and times, thresholds from settings."""

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings


@dataclass(frozen=True)
class Decision:
    extract: bool
    reason: str


@dataclass(frozen=True)
class Activity:
    """What happened in a source since its last extraction."""

    new_user_messages: int
    new_user_chars: int
    last_message_at: datetime | None


def conversation_decision(activity: Activity, *, now: datetime) -> Decision:
    """The automatic trigger for conversations: enough new user messages, or a conversation
    gone quiet with some news, or a dense one (long messages)."""
    count = activity.new_user_messages
    if count == 0:
        return Decision(False, "no new user messages")
    if count >= settings.EXTRACTION_USER_MESSAGES:
        return Decision(True, f"{count} new user messages")
    if activity.last_message_at is not None:
        idle_minutes = (now - activity.last_message_at).total_seconds() / 60
        if (
            idle_minutes >= settings.EXTRACTION_IDLE_MINUTES
            and count >= settings.EXTRACTION_IDLE_MIN_USER_MESSAGES
        ):
            return Decision(True, f"quiet for {idle_minutes:.0f} minutes after {count} messages")
    average = activity.new_user_chars / count
    if (
        count >= settings.EXTRACTION_DENSE_MIN_USER_MESSAGES
        and average >= settings.EXTRACTION_DENSE_AVERAGE_CHARS
    ):
        return Decision(True, f"dense: {average:.0f} characters per user message")
    return Decision(False, f"not enough new activity ({count} new user messages)")


def work_session_decision(*, has_project: bool, new_user_messages: int) -> Decision:
    """Work sessions are noisy and expensive: only in managed projects, every N messages."""
    if not has_project:
        return Decision(False, "the work session belongs to no managed project")
    needed = settings.EXTRACTION_WORK_USER_MESSAGES
    if new_user_messages < needed:
        return Decision(False, f"{new_user_messages} of {needed} new user messages")
    return Decision(True, f"{new_user_messages} new user messages")
