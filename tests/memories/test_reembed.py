"""manage.py reembed: rebuild every vector with the configured embedder."""

from io import StringIO

import pytest
from django.core.management import call_command

from memories.embeddings import embedders
from memories.models import MemoryEmbedding
from tests.memories.helpers import make_memory


def test_it_re_embeds_all_live_memories_with_the_current_model(owner, settings, openai_embedder):
    settings.EMBEDDER = "local"
    first = make_memory(owner, key="pet", value="Has a cat")
    second = make_memory(owner, key="job", value="Teaches maths")
    settings.EMBEDDER = "openai"

    output = StringIO()
    call_command("reembed", "--batch-size", "1", stdout=output, stderr=StringIO())

    models = set(MemoryEmbedding.objects.values_list("model", flat=True))
    assert models == {"fake-embedding"}
    assert MemoryEmbedding.objects.filter(memory__in=[first, second]).count() == 2
    assert "Re-embedded 2 memories" in output.getvalue()


def test_dry_run_changes_nothing(owner, settings, openai_embedder):
    settings.EMBEDDER = "local"
    make_memory(owner, key="pet", value="Has a cat")
    settings.EMBEDDER = "openai"

    output = StringIO()
    call_command("reembed", "--dry-run", stdout=output)

    models = set(MemoryEmbedding.objects.values_list("model", flat=True))
    assert models == {"multilingual-e5-small-int8"}
    assert "1 memories to embed" in output.getvalue()


def test_the_upgrade_from_minilm_to_e5_resumes_where_an_interrupted_run_stopped(
    owner, settings, monkeypatch
):
    settings.EMBEDDING_LOCAL_MODEL = "all-MiniLM-L6-v2"
    memories = [make_memory(owner, key=f"fact{i}", value=f"Fact number {i}") for i in range(3)]
    assert set(MemoryEmbedding.objects.values_list("model", flat=True)) == {"all-MiniLM-L6-v2-int8"}
    settings.EMBEDDING_LOCAL_MODEL = "multilingual-e5-small"
    e5 = embedders.get_embedder()
    calls = []
    embed = e5.embed

    def embed_then_fail(texts):
        calls.append(texts)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the operator's Ctrl-C in the second batch
        return embed(texts)

    monkeypatch.setattr(e5, "embed", embed_then_fail)
    with pytest.raises(KeyboardInterrupt):
        call_command("reembed", "--only-stale", "--batch-size", "1", stderr=StringIO())
    stored = dict(MemoryEmbedding.objects.values_list("memory_id", "model"))
    assert sorted(stored.values()) == [
        "all-MiniLM-L6-v2-int8",
        "all-MiniLM-L6-v2-int8",
        "multilingual-e5-small-int8",
    ]

    monkeypatch.setattr(e5, "embed", embed)
    output = StringIO()
    call_command("reembed", "--only-stale", "--batch-size", "1", stdout=output, stderr=StringIO())

    assert "2 memories to embed" in output.getvalue()
    stored = dict(MemoryEmbedding.objects.values_list("memory_id", "model"))
    assert set(stored) == {memory.id for memory in memories}
    assert set(stored.values()) == {"multilingual-e5-small-int8"}
