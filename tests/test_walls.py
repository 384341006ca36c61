"""The walls between the layers of the apps, drawn from their imports (direct, inside
functions too, and through other modules):

- webhook events are made from the objects' representations (memories.representations,
  extraction.representations), never from the REST layer: the API's views, inputs and
  plumbing may change without changing what a receiver gets;
- records (the models) import only other records: a model that reached up into a rule or a
  service would tie every migration and query to it;
- recall reads; it never reaches a module that writes memories, accounts or proposals.

tests/test_import_cycles.py holds the circles and ops below the apps, with the same graph."""

from collections import defaultdict

from tests.test_import_cycles import imports, module_files

# The REST layer: the shared plumbing (rest/) and each app's API and views.
REST_LAYER = ("rest", "memories.api", "extraction.api", "webhooks.api", "review.views")
# What sends events (every module of webhooks but its API and admin).
EVENTS = ("webhooks.events", "webhooks.delivery", "webhooks.targets", "webhooks.tasks")
RECORDS = ("memories.models", "extraction.models", "webhooks.models")
# What a record may import besides other records: ops sits below every app.
RECORDS_MAY_IMPORT = (*RECORDS, "ops")
RECALL = ("memories.recall",)
# Modules that write: services, saving, consolidation, erasure, import, accounts, extraction.
SERVICES = (
    "memories.services",
    "memories.saving",
    "memories.consolidation",
    "memories.erasure",
    "memories.portability",
    "memories.accounts",
    "memories.tools",
    "extraction.services",
    "extraction.runs",
)


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def import_graph() -> dict[str, set[str]]:
    modules = module_files()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        graph[name] = imports(path, modules) - {name}
    return dict(graph)


def reached(graph: dict[str, set[str]], start: str) -> dict[str, str]:
    """Every module `start` reaches through imports, with the module that imports it (to
    name the path of a crossing)."""
    via: dict[str, str] = {}
    work = [start]
    while work:
        module = work.pop()
        for imported in graph.get(module, ()):
            if imported not in via and imported != start:
                via[imported] = module
                work.append(imported)
    return via


def path_to(via: dict[str, str], start: str, end: str) -> str:
    steps = [end]
    while steps[-1] != start:
        steps.append(via[steps[-1]])
    return " -> ".join(reversed(steps))


def crossings(graph, sources: tuple[str, ...], forbidden) -> list[str]:
    """The import paths from a module of `sources` to a module `forbidden` accepts."""
    found = []
    for module in sorted(graph):
        if not within(module, sources):
            continue
        via = reached(graph, module)
        found += [path_to(via, module, other) for other in sorted(via) if forbidden(other)]
    return found


def test_events_never_reach_the_rest_layer():
    graph = import_graph()
    assert crossings(graph, EVENTS, lambda name: within(name, REST_LAYER)) == []


def test_records_import_only_records():
    graph = import_graph()
    direct = {module: graph[module] for module in graph if within(module, RECORDS)}
    found = [
        f"{module} -> {imported}"
        for module, imported_modules in sorted(direct.items())
        for imported in sorted(imported_modules)
        if not within(imported, RECORDS_MAY_IMPORT)
    ]
    assert found == []


def test_recall_never_reaches_a_service():
    graph = import_graph()
    assert crossings(graph, RECALL, lambda name: within(name, SERVICES)) == []


def test_the_walls_see_a_crossing_through_another_module():
    graph = {
        "webhooks.events": {"memories.representations"},
        "memories.representations": {"memories.api.fields"},
        "memories.api.fields": set(),
        "memories.recall.hint": {"memories.selectors"},
        "memories.selectors": set(),
    }
    assert crossings(graph, EVENTS, lambda name: within(name, REST_LAYER)) == [
        "webhooks.events -> memories.representations -> memories.api.fields"
    ]
    assert crossings(graph, RECALL, lambda name: within(name, SERVICES)) == []
    assert not within("memories.apis", ("memories.api",))
