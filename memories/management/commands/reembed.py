"""Re-embed every live memory with the configured embedder (after a model change)."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from tqdm import tqdm

from memories.embeddings.embedders import get_embedder
from memories.models import Memory, MemoryEmbedding
from memories.recall.index import index_memory
from memories.recall.vector_store import get_vector_store
from memories.recall.vector_store.partition_indexes import partition_indexes_sync


class Command(BaseCommand):
    help = (
        "Rebuild the vectors (and keyword index rows) of all live memories with the configured "
        "embedder, in batches, with a progress bar. Re-creates the vector table or index when "
        "the number of dimensions changed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--batch-size", type=int, default=256)
        parser.add_argument(
            "--only-stale",
            action="store_true",
            help="Only memories without a vector of the current model.",
        )
        parser.add_argument("--dry-run", action="store_true", help="Count, change nothing.")

    def handle(self, *args, batch_size: int, only_stale: bool, dry_run: bool, **options):
        embedder = get_embedder()
        if embedder is None:
            raise CommandError("EMBEDDER=none: there is nothing to embed with.")
        memories = Memory.objects.filter(deleted_at__isnull=True).order_by("id")
        if only_stale:
            current = MemoryEmbedding.objects.filter(
                model=embedder.model_name, dimensions=embedder.dimensions
            ).values("memory_id")
            memories = memories.exclude(id__in=current)
        total = memories.count()
        self.stdout.write(
            f"{total} memories to embed with {embedder.model_name} ({embedder.dimensions} d)."
        )
        if dry_run or not total:
            return
        if embedder.dimensions != settings.EMBEDDING_DIMENSIONS:
            raise CommandError(
                f"The embedder gives {embedder.dimensions} dimensions but EMBEDDING_DIMENSIONS "
                f"is {settings.EMBEDDING_DIMENSIONS}; set it to match."
            )
        self._prepare_store(embedder.dimensions)
        with tqdm(total=total, unit="memory", disable=options["verbosity"] == 0) as progress:
            last_id = None
            while True:
                batch_query = memories if last_id is None else memories.filter(id__gt=last_id)
                batch = list(batch_query[:batch_size])
                if not batch:
                    break
                vectors = embedder.embed([memory.embedding_text for memory in batch])
                with transaction.atomic():
                    for memory, vector in zip(batch, vectors, strict=True):
                        index_memory(memory, vector=vector)
                last_id = batch[-1].id
                progress.update(len(batch))
        # The new vectors' graphs now, not at the periodic task's next run (PostgreSQL).
        graphs = partition_indexes_sync()
        if graphs["created"] or graphs["dropped"]:
            self.stdout.write(
                f"{len(graphs['created'])} partition graphs built, "
                f"{len(graphs['dropped'])} dropped."
            )
        self.stdout.write(self.style.SUCCESS(f"Re-embedded {total} memories."))

    def _prepare_store(self, dimensions: int) -> None:
        get_vector_store().prepare(dimensions=dimensions)
