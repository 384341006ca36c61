"""Pinned memories: how many one owner may keep (MEMORY_PINNED_MAX). The owner is the end
user a memory is about, or the persona for a persona memory. A pinned memory counts while it
is current or pending review, so approving one cannot go past the limit either."""

from collections import Counter
from collections.abc import Collection, Sequence
from uuid import UUID

from django.conf import settings

from memories.errors import InvalidInput
from memories.models import Memory, Persona, Status, User

COUNTED = (Status.ACTIVE, Status.PENDING_REVIEW)


def _owner(memory: Memory) -> tuple[str, UUID]:
    if memory.user_id is not None:
        return ("user", memory.user_id)
    # The scopes' carriers rule: a memory without a user is a persona's.
    assert memory.persona_id is not None
    return ("persona", memory.persona_id)


def pinned_room_check(new_pins: Sequence[Memory], *, leaving: Collection[UUID] = ()) -> None:
    """Raise InvalidInput naming `pinned` when pinning `new_pins` (memories becoming pinned,
    written or not yet) would give an owner more than MEMORY_PINNED_MAX; `leaving` are ids
    that stop counting in the same write (the memories a save replaces). Call it inside the
    write's transaction: it locks the owner's row, so two pins at once cannot both take the
    last place (SQLite has one writer at a time anyway)."""
    leaving = set(leaving)
    staying = [memory for memory in new_pins if memory.id not in leaving]
    if not staying:
        return
    skip = {*leaving, *(memory.id for memory in new_pins)}
    for (kind, owner_id), adding in Counter(_owner(memory) for memory in staying).items():
        if kind == "user":
            list(User.objects.select_for_update().filter(id=owner_id).values_list("id"))
            held = Memory.objects.filter(user_id=owner_id)
        else:
            list(Persona.objects.select_for_update().filter(id=owner_id).values_list("id"))
            held = Memory.objects.filter(user__isnull=True, persona_id=owner_id)
        count = (
            held.filter(pinned=True, status__in=COUNTED, deleted_at__isnull=True)
            .exclude(id__in=skip)
            .count()
        )
        if count + adding > settings.MEMORY_PINNED_MAX:
            raise InvalidInput(
                f"At most {settings.MEMORY_PINNED_MAX} memories may be pinned; "
                f"{count} already are. Unpin one first (PATCH it with pinned: false).",
                field="pinned",
            )


def pinned_limit_check(user: User) -> None:
    """Raise InvalidInput naming `pinned` when the user's memories already written in this
    transaction hold more than MEMORY_PINNED_MAX pins (an import checks each chunk so)."""
    count = Memory.objects.filter(
        user=user, pinned=True, status__in=COUNTED, deleted_at__isnull=True
    ).count()
    if count > settings.MEMORY_PINNED_MAX:
        raise InvalidInput(
            f"At most {settings.MEMORY_PINNED_MAX} memories may be pinned; the file would "
            f"make {count}. Unpin some in the file (pinned: false) and import it again.",
            field="pinned",
        )
