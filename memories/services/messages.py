"""Messages of topics and work sessions, and the extraction triggers they set off."""

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from memories.models import (
    Message,
    MessageRole,
    Project,
    Topic,
    User,
    WorkSession,
    WorkSessionMessage,
)


@dataclass
class PostedMessages:
    """What a post to a topic or work session wrote, and the extraction it started: what a
    MESSAGE_POSTED_HOOKS hook reported ({"task_id", "status"}), or None. The hooks run once
    the messages are committed, so `extraction` is filled by the time the service returns,
    unless the post ran inside a longer transaction (then they run at its commit)."""

    messages: list
    extraction: dict | None = None


def _message_posted(*, kind: str, source_id: UUID, posted: PostedMessages) -> None:
    """Tell the configured hooks (extraction's trigger policy) about new user messages once
    they are committed: once per post, however many messages it carried. A hook returns what
    it started ({"task_id", "status"}) or None; the first answer becomes the post's
    `extraction`. robust: a hook's failure is logged and never undoes or fails the post."""
    if not any(message.role == MessageRole.USER for message in posted.messages):
        return
    for path in settings.MESSAGE_POSTED_HOOKS:
        hook = import_string(path)

        def run_hook(hook=hook) -> None:
            reported = hook(kind=kind, source_id=source_id)
            if reported is not None and posted.extraction is None:
                posted.extraction = reported

        transaction.on_commit(run_hook, robust=True)


def _messages_append(*, parent: Topic | WorkSession, items: Sequence[dict]) -> PostedMessages:
    """Append messages in input order, in one transaction and one bulk insert (their ids
    ascend in input order), then tell the hooks once."""
    model: type[Message] | type[WorkSessionMessage]
    carrier: dict[str, Topic | WorkSession]
    if isinstance(parent, Topic):
        kind, model, carrier = "topic", Message, {"topic": parent}
    else:
        kind, model, carrier = "work_session", WorkSessionMessage, {"session": parent}
    posted = PostedMessages(
        messages=[
            model(role=MessageRole(item["role"]), content=item["content"], **carrier)
            for item in items
        ]
    )
    with transaction.atomic():
        model.objects.bulk_create(posted.messages)
        type(parent).objects.filter(id=parent.id).update(updated_at=timezone.now())
        _message_posted(kind=kind, source_id=parent.id, posted=posted)
    return posted


def message_create(*, topic: Topic, role: str, content: str) -> Message:
    """Append a message to a topic."""
    posted = _messages_append(parent=topic, items=[{"role": role, "content": content}])
    return posted.messages[0]


def message_create_batch(*, topic: Topic, items: Sequence[dict]) -> PostedMessages:
    """Append many messages ({role, content}, as MessageSerializer validates them) to a topic,
    all or nothing, in input order; the trigger policy hears about them once. Returns them
    and the extraction the hooks started, if any."""
    return _messages_append(parent=topic, items=items)


def work_session_create(*, user: User, project: Project | None = None) -> WorkSession:
    """Create an agent work session, optionally inside a managed project."""
    return WorkSession.objects.create(user=user, project=project)


def work_session_message_create(
    *, session: WorkSession, role: str, content: str
) -> WorkSessionMessage:
    """Append a message to a work session."""
    posted = _messages_append(parent=session, items=[{"role": role, "content": content}])
    return posted.messages[0]


def work_session_message_create_batch(
    *, session: WorkSession, items: Sequence[dict]
) -> PostedMessages:
    """Append many messages to a work session, as message_create_batch does for topics."""
    return _messages_append(parent=session, items=items)
