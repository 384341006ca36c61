"""Memory records and the scope carriers they point at (personas, projects, topics, work
sessions and their messages), by subdomain; re-exported here, so `from memories.models import
Memory` (and Django, which finds the app's models here) need not know where each lives.

- accounts: tenants, users, API keys
- carriers: personas, projects, topics, messages, work sessions, configuration
- memory: memories (scopes, carriers, vectors, revisions)
- keyword_index: the keyword index's tables
- proposals: consolidation proposals
- entities: the people, pets, places and organisations memories are about
- profiles: the summary of who a user is
- retention: how long a tenant keeps its memories"""

from memories.models.accounts import (
    DEFAULT_TENANT_SLUG,
    ApiKey,
    ApiKeyScope,
    Tenant,
    User,
)
from memories.models.carriers import (
    ConfigEntry,
    Message,
    MessageRole,
    Persona,
    Project,
    Topic,
    WorkSession,
    WorkSessionMessage,
)
from memories.models.entities import Entity, EntityKind
from memories.models.keyword_index import (
    KeywordPartition,
    KeywordPosting,
    KeywordTerm,
)
from memories.models.memory import (
    CARRIERS,
    SCOPE_CARRIERS,
    CarrierIds,
    Memory,
    MemoryEmbedding,
    MemoryRevision,
    NormalisedKeyField,
    RevisionAction,
    Scope,
    Source,
    Status,
    normalise,
    scope_carriers_condition,
    unexpired,
)
from memories.models.profiles import Profile, SummaryWriter
from memories.models.proposals import (
    ConsolidationProposal,
    ProposalKind,
    ProposalStatus,
)
from memories.models.retention import RetentionRule

__all__ = [
    "Profile",
    "SummaryWriter",
    "Entity",
    "EntityKind",
    "DEFAULT_TENANT_SLUG",
    "Tenant",
    "User",
    "ApiKeyScope",
    "ApiKey",
    "Persona",
    "Project",
    "Topic",
    "MessageRole",
    "Message",
    "WorkSession",
    "WorkSessionMessage",
    "ConfigEntry",
    "Scope",
    "Source",
    "Status",
    "CARRIERS",
    "SCOPE_CARRIERS",
    "CarrierIds",
    "scope_carriers_condition",
    "unexpired",
    "normalise",
    "NormalisedKeyField",
    "Memory",
    "MemoryEmbedding",
    "RevisionAction",
    "MemoryRevision",
    "KeywordPartition",
    "KeywordTerm",
    "KeywordPosting",
    "ProposalKind",
    "ProposalStatus",
    "ConsolidationProposal",
    "RetentionRule",
]
