"""The scope-to-carrier rule, as every writer, serializer and importer applies it.

models.SCOPE_CARRIERS states which carriers (user, persona, project, topic) each scope sets;
the database constraint and the vector partition keys are built from it there. Here is what
input is checked against: the scope's other names, and which carrier ids a scope needs or
refuses, with the message that names the field at fault."""

from collections.abc import Iterable

from memories.models import CARRIERS, SCOPE_CARRIERS, Scope

# Other names a client may send for a scope (mem0's "global" memories are user-scope here).
SCOPE_ALIASES = {"global": Scope.USER}
SCOPE_INPUT_CHOICES = [*Scope.values, *SCOPE_ALIASES]


def scope_named(value: str) -> str:
    """The scope a client's name stands for."""
    return SCOPE_ALIASES.get(value, value)


def scopes_carrying(carrier: str) -> list[str]:
    return [scope for scope, carriers in SCOPE_CARRIERS.items() if carrier in carriers]


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
