"""Finish the erasures a crash or a killed request stopped half-way (what Celery beat runs)."""

from datetime import timedelta

from django.core.management.base import BaseCommand
from tqdm import tqdm

from memories.erasure import erasure_finish, erasures_pending


class Command(BaseCommand):
    help = (
        "Finish every erasure that was started (the user is hidden already) but not finished: "
        "their remaining memories in short batches, then the rest of their rows."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--started-before",
            type=int,
            default=0,
            metavar="SECONDS",
            help="Only erasures started at least this many seconds ago (default 0: all).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List the pending erasures; erase nothing."
        )

    def handle(self, *args, started_before: int, dry_run: bool, **options):
        pending = erasures_pending(started_before=timedelta(seconds=started_before))
        if dry_run:
            for user_id in pending:
                self.stdout.write(str(user_id))
            self.stdout.write(self.style.SUCCESS(f"{len(pending)} erasures pending."))
            return
        for user_id in tqdm(pending, unit="user", disable=options["verbosity"] == 0):
            erasure_finish(user_id=user_id)
        self.stdout.write(self.style.SUCCESS(f"Finished {len(pending)} erasures."))
