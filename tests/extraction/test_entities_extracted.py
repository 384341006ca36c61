"""Entities from the utility model's answer (issue 45, item 2): each proposed memory names
the entities it is about; the proposal links them, and the same person in three memories is
one entity. The model is the fake OpenAI-compatible server on 127.0.0.1."""

from extraction import services
from extraction.parsing import EntityMention, parse_candidates
from extraction.prompt import SYSTEM_PROMPT
from memories.models import Entity, Status
from tests.extraction.helpers import answer, memory, new_topic, post

SOFIA = {"name": "Sofia", "kind": "person", "relation": "wife"}


def test_the_prompt_asks_for_each_memorys_entities():
    assert '"entities": [{"name"' in SYSTEM_PROMPT and "relation" in SYSTEM_PROMPT


def test_a_models_entities_link_one_entity_per_person(api, owner, llm):
    topic_id = new_topic(api)
    post(api, topic_id, "My wife Sofia is a nurse, she loves sailing, and she's from Porto.")
    llm.chat_answers.append(
        answer(
            memory("wife's job", "Wife Sofia works as a nurse", entities=[SOFIA]),
            memory("wife's hobby", "Sofia loves sailing", entities=[{"name": "sofia"}]),
            memory(
                "wife's origin",
                "Sofia comes from Porto",
                entities=[SOFIA, {"name": "Porto", "kind": "place", "relation": ""}],
            ),
        )
    )

    run = services.extract_topic(topic_id=topic_id)

    assert run.created == 3
    entities = {entity.name: entity for entity in Entity.objects.filter(user=owner)}
    assert set(entities) == {"Sofia", "Porto"}
    sofia = entities["Sofia"]
    assert (sofia.kind, sofia.relation) == ("person", "wife")
    assert sorted(m.key for m in sofia.memories.all()) == [
        "wife's hobby",
        "wife's job",
        "wife's origin",
    ]
    assert {m.status for m in sofia.memories.all()} == {Status.PENDING_REVIEW}
    assert entities["Porto"].kind == "place"


def test_malformed_entities_are_left_out_and_the_memory_kept():
    [candidate] = parse_candidates(
        answer(
            memory(
                "pet",
                "Has a dog called Pip",
                entities=[
                    {"name": "Pip", "kind": "pet", "relation": "dog"},
                    {"name": ""},
                    {"kind": "person"},
                    "Olive",
                    {"name": "Olive", "kind": "dragon", "relation": 7},
                ],
            )
        )
    )

    assert candidate.entities == (
        EntityMention("Pip", "pet", "dog"),
        EntityMention("Olive", "other", ""),
    )
    assert parse_candidates(answer(memory("k", "v")))[0].entities == ()
