"""Vector search sits behind one interface: outside memories/recall/vector_store/ no module
imports sqlite_vec, pgvector or the store implementations, and nothing branches on the
database to search vectors. The few places that must touch them say why below."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memories", "extraction", "review", "ops", "config", "webhooks", "rest")
IMPLEMENTATIONS = (
    "sqlite_vec",
    "pgvector",
    "memories.recall.vector_store.sqlite_vec",
    "memories.recall.vector_store.pgvector",
)
ALLOWED = {
    # The model's vector column is pgvector's field type.
    "memories/models/memory.py",
    # The database backend loads the sqlite-vec extension into each new connection.
    "memories/sqlite_backend/base.py",
}


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_only_the_vector_store_package_imports_the_vector_libraries_and_implementations():
    offenders = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("memories/recall/vector_store/") or relative in ALLOWED:
                continue
            if "/migrations/" in relative:
                continue  # migrations create the store's structures once, as of their time
            found = {
                name
                for name in imported_modules(path)
                if any(name == lib or name.startswith(lib + ".") for lib in IMPLEMENTATIONS)
            }
            if found:
                offenders.append(f"{relative}: {sorted(found)}")

    assert offenders == []
