"""Every write to memories and their scope carriers, by subdomain. Each service is one
transaction; embedding (slow I/O) happens before the transaction opens. The names are
re-exported here, so callers write `from memories import services` and `services.memory_create`.

- revisions: what a memory looked like (snapshot) and the revision rows every change writes
- writes: create, update, delete, restore
- review: approve and reject proposals, archive, merge
- carriers: personas, projects, topics
- messages: messages of topics and work sessions, and the extraction they trigger
(Counting accesses is recall's side effect: memories.recall.access.)"""

from memories.services.carriers import persona_create, persona_update, project_create, topic_create
from memories.services.messages import (
    PostedMessages,
    message_create,
    message_create_batch,
    work_session_create,
    work_session_message_create,
    work_session_message_create_batch,
)
from memories.services.review import (
    REVIEW_OUTCOMES,
    memory_archive,
    memory_merge,
    memory_review,
)
from memories.services.revisions import (
    EDITABLE_FIELDS,
    SNAPSHOT_FIELDS,
    clamp_unit,
    record_revision,
    snapshot,
)
from memories.services.writes import (
    memory_create,
    memory_delete,
    memory_new,
    memory_restore,
    memory_update,
)

__all__ = [
    "EDITABLE_FIELDS",
    "REVIEW_OUTCOMES",
    "SNAPSHOT_FIELDS",
    "PostedMessages",
    "clamp_unit",
    "memory_archive",
    "memory_create",
    "memory_delete",
    "memory_merge",
    "memory_new",
    "memory_restore",
    "memory_review",
    "memory_update",
    "message_create",
    "message_create_batch",
    "persona_create",
    "persona_update",
    "project_create",
    "record_revision",
    "snapshot",
    "topic_create",
    "work_session_create",
    "work_session_message_create",
    "work_session_message_create_batch",
]
