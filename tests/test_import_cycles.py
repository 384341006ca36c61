"""No two modules of the service or the benchmarks import each other, directly or round a
circle, counting the imports made inside functions too: a lazy import that only dodges an
import-time error still ties the two modules into one."""

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memories", "extraction", "review", "ops", "config", "webhooks", "rest", "bench")


def module_files() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


def imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of `modules` that the file imports anywhere. `from package import name`
    counts as importing the submodule when `name` is one, else the package itself."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in modules
                else node.module
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                found.add(name)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, without
    recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_round_a_circle():
    modules = module_files()
    graph = defaultdict(set)
    for name, path in modules.items():
        graph[name] = imports(path, modules) - {name}

    assert circles(dict(graph)) == []


def test_the_check_finds_a_circle_and_a_lazy_import_closes_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    lazy = "def f():\n    from memories.recall import recall\n"
    path = ROOT / "var" / "import-cycle-check.py"
    path.parent.mkdir(exist_ok=True)
    path.write_text(lazy)
    try:
        found = imports(path, {"memories.recall": path, "memories.recall.recall": path})
    finally:
        path.unlink()
    assert found == {"memories.recall.recall"}


# Packages below others: ops (timing, metrics, health, the error body) serves every app and
# imports none of them; apps add what ops reports through its registries (AppConfig.ready).
LOWER_PACKAGES = {"ops": ("memories", "extraction", "review", "webhooks")}


def test_lower_packages_import_none_of_the_packages_above_them():
    modules = module_files()
    crossings = []
    for name, path in modules.items():
        package = name.split(".")[0]
        for imported in imports(path, modules):
            if imported.split(".")[0] in LOWER_PACKAGES.get(package, ()):
                crossings.append(f"{name} -> {imported}")
    assert crossings == []
