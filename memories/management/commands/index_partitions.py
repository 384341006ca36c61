"""Build the HNSW graphs of large partitions and drop those of shrunk ones now (what Celery
beat runs every RECALL_PARTITION_INDEX_INTERVAL_SECONDS; PostgreSQL only)."""

from django.core.management.base import BaseCommand, CommandError

from memories.recall.vector_store.partition_indexes import partition_indexes_sync


class Command(BaseCommand):
    help = (
        "Give every partition with at least RECALL_PARTITION_INDEX_MIN_MEMORIES vectors an "
        "HNSW index of its own (built CONCURRENTLY) and drop those of partitions below half "
        "of it. PostgreSQL only."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--min-memories",
            type=int,
            metavar="N",
            help="This threshold instead of RECALL_PARTITION_INDEX_MIN_MEMORIES.",
        )

    def handle(self, *args, min_memories: int | None, **options):
        if min_memories is not None and min_memories < 2:
            raise CommandError("--min-memories must be at least 2")
        done = partition_indexes_sync(min_memories=min_memories)
        if done.get("skipped"):
            raise CommandError(f"Nothing done: {done['skipped']}.")
        for built in done["created"]:
            self.stdout.write(
                f"built {built['partition']}: {built['vectors']} vectors, {built['seconds']} s"
            )
        for name in done["dropped"]:
            self.stdout.write(f"dropped {name}")
        self.stdout.write(
            self.style.SUCCESS(f"{len(done['created'])} built, {len(done['dropped'])} dropped.")
        )
