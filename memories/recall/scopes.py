"""Which scopes a recall request may draw from, and how each store filters them."""

from collections.abc import Sequence

from django.db import connection
from django.db.models import Q

from memories.models import CarrierIds, Memory, Persona, Project, Scope, Topic, User, WorkSession
from memories.selectors import persona_reachable


def scopes_condition(scopes: Sequence[CarrierIds]) -> Q:
    """Any of these scopes, as a filter on Memory."""
    condition = Q()
    for scope in scopes:
        condition |= scope.condition
    return condition


def _id_param(value):
    # As the database stores ids (SQLite keeps UUIDs as 32 hex characters).
    return Memory._meta.pk.get_db_prep_value(value, connection)


def scopes_sql(scopes: Sequence[CarrierIds], *, prefix: str = "") -> tuple[str, list]:
    """The same condition as CarrierIds.condition, OR-ed over the scopes, as SQL on the
    memory table (columns prefixed with `prefix`, say "m."), for hand-written statements."""
    terms, params = [], []
    for scope in scopes:
        parts = [f"{prefix}scope = %s"]
        params.append(scope.scope)
        for column in ("user_id", "persona_id", "project_id", "topic_id"):
            value = getattr(scope, column)
            if value is None:
                parts.append(f"{prefix}{column} IS NULL")
            else:
                parts.append(f"{prefix}{column} = %s")
                params.append(_id_param(value))
        terms.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(terms), params


def recall_scopes(
    *,
    user: User,
    topic: Topic | None = None,
    project: Project | None = None,
    persona: Persona | None = None,
    work_session: WorkSession | None = None,
) -> list[CarrierIds]:
    """The user's own memories always; session ones of the topic; project ones of the project
    (the topic's or work session's when not given); persona ones of the persona (the
    topic's when not given, if the user reaches it: a topic made before personas belonged to
    tenants may name another tenant's)."""
    if topic is not None:
        project = project or topic.project
        if persona is None and topic.persona is not None:
            persona = topic.persona if persona_reachable(user, topic.persona) else None
    if work_session is not None:
        project = project or work_session.project
    scopes = [CarrierIds(Scope.USER, user_id=user.id)]
    if topic is not None:
        scopes.append(CarrierIds(Scope.SESSION, user_id=user.id, topic_id=topic.id))
    if project is not None:
        scopes.append(CarrierIds(Scope.PROJECT, user_id=user.id, project_id=project.id))
    if persona is not None:
        scopes.append(CarrierIds(Scope.PERSONA_USER, user_id=user.id, persona_id=persona.id))
        scopes.append(CarrierIds(Scope.PERSONA, persona_id=persona.id))
    return scopes
