"""`python -m bench quality --entities rules` (bench/quality.py): each LOCOMO turn's memory is
linked to the entities the rule extractor reads in the turn's words, as a save with entities
links them, so the entity recall of issue 45 can show on LOCOMO."""

import numpy as np
import pytest

from bench import quality
from bench.locomo import Conversation, Question, Turn
from memories.entities.linking import Mention
from memories.models import Entity, Memory

DATE = "[1:56 pm on 8 May, 2023]"


def _conversation() -> Conversation:
    turns = [
        Turn("D1:1", f"{DATE} Melanie: I took my kids to the park yesterday. My dog Pip came too!"),
        Turn("D1:2", f"{DATE} Caroline: That sounds lovely, it was sunny here."),
        Turn("D1:3", f"{DATE} Melanie: My kids loved the slide."),
    ]
    question = Question("What did Melanie's kids do?", 1, frozenset({"D1:1", "D1:3"}))
    return Conversation("conv-test", turns, [question])


class _Embedder:
    """Unit vectors, one a text, no model."""

    def embed(self, texts):
        rng = np.random.default_rng(len(texts))
        vectors = rng.normal(size=(len(texts), 384))
        return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


def test_turn_mentions_reads_the_words_not_the_date_or_speaker():
    text = f"{DATE} Melanie: I took my kids to the park. My dog Pip came too!"
    assert quality.turn_mentions(text) == [
        Mention("my kid", "person", "kid"),
        Mention("Pip", "pet", "dog"),
    ]
    assert quality.turn_mentions(f"{DATE} Caroline: That sounds lovely.") == []


@pytest.mark.django_db
def test_ingest_links_each_turn_to_its_entities_only_when_asked():
    conversation = _conversation()
    users, keys, timing = quality._ingest([conversation], _Embedder(), entities="rules")
    assert timing["entities"] == {"source": "rules", "memories_linked": 2, "entities": 2}
    user = users["conv-test"]
    kids = Entity.objects.get(user=user, relation="kid")
    by_key = {keys[m.id]: m for m in Memory.objects.filter(user=user)}
    assert set(kids.memories.all()) == {by_key["D1:1"], by_key["D1:3"]}
    assert list(Entity.objects.get(user=user, name="Pip").memories.all()) == [by_key["D1:1"]]
    assert not by_key["D1:2"].entities.exists()

    conversation = Conversation("conv-plain", conversation.turns, conversation.questions)
    users, _, timing = quality._ingest([conversation], _Embedder())
    assert "entities" not in timing
    assert not Entity.objects.filter(user=users["conv-plain"]).exists()


def test_ingest_refuses_an_unknown_entity_source():
    with pytest.raises(ValueError, match="entities"):
        quality._ingest([], _Embedder(), entities="model")
