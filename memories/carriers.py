"""The scope-to-carrier rule, as every writer, serializer and importer applies it.

models.SCOPE_CARRIERS states which carriers (user, persona, project, topic) each scope sets;
the database constraint and the vector partition keys are built from it there. Here is what
input is checked against: the scope's other names, and which carrier ids a scope needs or
refuses, with the message that names the field at fault; where a fact said in a context lands;
and whose projects and topics a user may write into."""

from collections.abc import Iterable

from django.db.models import Model, QuerySet

from memories.models import CARRIERS, SCOPE_CARRIERS, Project, Scope, Topic, User

# Other names a client may send for a scope (mem0's "global" memories are user-scope here).
SCOPE_ALIASES = {"global": Scope.USER}
SCOPE_INPUT_CHOICES = [*Scope.values, *SCOPE_ALIASES]


def scope_named(value: str) -> str:
    """The scope a client's name stands for."""
    return SCOPE_ALIASES.get(value, value)


def scopes_carrying(carrier: str) -> list[str]:
    return [scope for scope, carriers in SCOPE_CARRIERS.items() if carrier in carriers]


# Where extraction puts a fact said in a context: the scope it names if the context has that
# scope's carriers, else the next one listed, else the user's own. A work session has no topic,
# so its session facts belong to its project. Never persona scope, which every user of the
# persona reads.
CONTEXT_FALLBACK: dict[str, tuple[str, ...]] = {
    Scope.SESSION: (Scope.SESSION, Scope.PROJECT),
    Scope.PROJECT: (Scope.PROJECT,),
    Scope.PERSONA_USER: (Scope.PERSONA_USER,),
}


def scope_in_context(scope: str, *, present: Iterable[str]) -> str:
    """The scope a fact named `scope` lands in, in a context holding the `present` carriers."""
    present = set(present)
    for candidate in CONTEXT_FALLBACK.get(scope, ()):
        if set(SCOPE_CARRIERS[candidate]) <= present:
            return candidate
    return Scope.USER


def carrier_errors(
    scope: str, *, given: Iterable[str], checked: Iterable[str] = CARRIERS
) -> dict[str, str]:
    """For each carrier in `checked`, keyed by its field (`project_id`): the message when the
    scope needs it and it was not given, or it was given and the scope has no such carrier.
    Empty when the carriers fit the scope."""
    given = set(given)
    errors = {}
    for carrier in checked:
        needed = carrier in SCOPE_CARRIERS[scope]
        if needed and carrier not in given:
            errors[f"{carrier}_id"] = f"Required for {scope} scope."
        elif not needed and carrier in given:
            carrying = " or ".join(scopes_carrying(carrier))
            errors[f"{carrier}_id"] = f"Not allowed for {scope} scope; use scope {carrying}."
    return errors


# Projects and topics belong to one user (the field naming them); a user writes memories only
# into their own. Personas are shared: every user may read them, staff write their memories.
OWNED_CARRIERS: dict[str, tuple[type[Model], str]] = {
    "project": (Project, "owner"),
    "topic": (Topic, "user"),
}


def owned_carriers(name: str, user: User) -> QuerySet:
    """The user's own projects or topics."""
    model, owner_field = OWNED_CARRIERS[name]
    return model._default_manager.filter(**{owner_field: user})


def ownership_errors(user: User | None, **carriers: Model | None) -> dict[str, str]:
    """For each given project or topic that is not the user's, keyed by its field: the answer
    an unknown id gets, so nobody learns another user's ids exist. Empty when all are theirs."""
    errors = {}
    for name, carrier in carriers.items():
        if carrier is None or user is None:
            continue
        _, owner_field = OWNED_CARRIERS[name]
        if getattr(carrier, f"{owner_field}_id") != user.id:
            errors[f"{name}_id"] = f"No such {name}."
    return errors
