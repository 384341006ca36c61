"""manage.py reembed: rebuild every vector with the configured embedder."""

from io import StringIO

from django.core.management import call_command

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

    assert set(MemoryEmbedding.objects.values_list("model", flat=True)) == {"all-MiniLM-L6-v2-int8"}
    assert "1 memories to embed" in output.getvalue()
