"""How entity names compare: case- and accent-folded, spaces collapsed ("Sofía" is "sofia")."""

import unicodedata
from dataclasses import dataclass

from memories.models import EntityKind


@dataclass(frozen=True)
class Mention:
    """An entity as a save, the extractor or a memory's words name it."""

    name: str
    kind: str = EntityKind.OTHER
    relation: str = ""


def fold(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name.casefold())
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return " ".join(bare.split())


def names_folded(name: str, aliases: list[str]) -> list[str]:
    """The folded name and aliases, each once, the name first."""
    folded: list[str] = []
    for text in (name, *aliases):
        key = fold(text)
        if key and key not in folded:
            folded.append(key)
    return folded
