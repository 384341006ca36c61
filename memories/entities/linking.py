"""Linking a memory to the entities it mentions, and merging two entities of one user.

A mention (name, kind, relation) links to the user's entity whose name or alias matches it
folded (names.fold); else, when the user has exactly one entity of the mention's relation and
one of the two is named by the relation alone ("my wife" then "Sofia", relation wife), to that
one, which takes the proper name and keeps the other as an alias; else a new entity is made.
Run inside the caller's transaction."""

import re
import unicodedata
from collections.abc import Iterable, Sequence

from django.db import transaction

from memories.entities.names import Mention, fold, names_folded
from memories.entities.reading import mentions_in_value
from memories.errors import InvalidInput
from memories.models import Entity, EntityKind, Memory, User
from webhooks.events import entity_created, entity_merged


def _names_the_relation(name: str, relation: str) -> bool:
    """ "wife", "my wife", "our dog", "the employer": a name that only says the relation."""
    words = fold(name).split()
    if words and words[0] in ("my", "our", "the"):
        words = words[1:]
    return bool(relation) and " ".join(words) == relation


def _entity_for(user: User, mention: Mention, entities: list[Entity]) -> Entity:
    key = fold(mention.name)
    for entity in entities:
        if key in entity.names_folded:
            if mention.relation and not entity.relation:
                entity.relation = mention.relation
                entity.save(update_fields=["relation", "updated_at"])
            return entity
    relation = fold(mention.relation)
    same_relation = [e for e in entities if relation and fold(e.relation) == relation]
    # "my wife" and "Sofia, my wife" are one person when the user has one entity of that
    # relation and one of the two names is only the relation; two dogs named are two dogs.
    if len(same_relation) == 1 and (
        _names_the_relation(mention.name, relation)
        or _names_the_relation(same_relation[0].name, relation)
    ):
        entity = same_relation[0]
        if _names_the_relation(entity.name, relation) and not _names_the_relation(
            mention.name, relation
        ):
            entity.aliases = [entity.name, *entity.aliases]
            entity.name = mention.name
        else:
            entity.aliases = [*entity.aliases, mention.name]
        entity.names_folded = names_folded(entity.name, entity.aliases)
        entity.save(update_fields=["name", "aliases", "names_folded", "updated_at"])
        return entity
    entity = Entity.objects.create(
        user=user,
        kind=mention.kind if mention.kind in EntityKind.values else EntityKind.OTHER,
        relation=mention.relation,
        name=mention.name,
        names_folded=names_folded(mention.name, []),
    )
    entities.append(entity)
    return entity


def entities_link(memory: Memory, mentions: Iterable[Mention]) -> list[Entity]:
    """Link `memory` (of an end user; a persona memory links nothing) to the entities of its
    mentions, made when missing. Returns them, each once."""
    mentions = [mention for mention in mentions if fold(mention.name)]
    if memory.user_id is None or not mentions:
        return []
    user = memory.user
    assert user is not None  # memory.user_id is set
    entities = list(Entity.objects.filter(user_id=memory.user_id).order_by("created_at", "id"))
    known = {entity.id for entity in entities}
    linked: list[Entity] = []
    for mention in mentions:
        entity = _entity_for(user, mention, entities)
        if entity not in linked:
            linked.append(entity)
    memory.entities.add(*linked)
    for entity in linked:  # the events of the new ones, which already hold this memory
        if entity.id not in known:
            entity_created(entity)
    return linked


def entities_link_read(memory: Memory) -> list[Entity]:
    """Link a memory saved without `entities` to those its value names: the user's people and
    pets at the head of a clause (reading.mentions_in_value: "Wife Priya runs the bakery"),
    and the user's known entities named in it by a proper name or alias, as written
    ("Kiwi needs kidney-diet cat food" once the cat Kiwi is known). Returns them."""
    if memory.user_id is None:
        return []
    mentions = list(mentions_in_value(memory.value))
    value = _unaccented(memory.value)
    for entity in Entity.objects.filter(user_id=memory.user_id).only("name", "aliases", "relation"):
        for name in (entity.name, *entity.aliases):
            if _names_the_relation(name, fold(entity.relation)) or len(name) < 2:
                continue
            # Case kept: "Pip" the dog is not "pip install"; accents aside: "Ines" is "Inês".
            if re.search(rf"(?<!\w){re.escape(_unaccented(name))}(?!\w)", value):
                mentions.append(Mention(name, entity.kind, entity.relation))
                break
    return entities_link(memory, mentions)


def _unaccented(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char))


@transaction.atomic
def entities_merge(*, keep: Entity, others: Sequence[Entity]) -> Entity:
    """Merge `others` into `keep` (all of one user): keep takes their memories, and their
    names as aliases; they are deleted. Raises InvalidInput naming entity_ids."""
    others = [other for other in others if other.id != keep.id]
    if not others:
        raise InvalidInput("Name at least one other entity to merge.", field="entity_ids")
    if any(other.user_id != keep.user_id for other in others):
        raise InvalidInput("Entities merge only within one user.", field="entity_ids")
    aliases = list(keep.aliases)
    for other in others:
        for name in (other.name, *other.aliases):
            if fold(name) not in names_folded(keep.name, aliases):
                aliases.append(name)
        keep.memories.add(*other.memories.all())
        if not keep.relation and other.relation:
            keep.relation = other.relation
    Entity.objects.filter(id__in=[other.id for other in others]).delete()
    keep.aliases = aliases
    keep.names_folded = names_folded(keep.name, aliases)
    keep.save()
    entity_merged(keep, merged_ids=[other.id for other in others])
    return keep


def entity_rename(entity: Entity, *, changes: dict) -> Entity:
    """Apply name, aliases, relation or kind (already validated) and refold the names."""
    for name, value in changes.items():
        setattr(entity, name, value)
    entity.names_folded = names_folded(entity.name, entity.aliases)
    entity.save()
    return entity
