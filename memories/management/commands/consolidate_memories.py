"""Propose merges and archivals of memories for review, by hand (what Celery beat runs)."""

import uuid

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from tqdm import tqdm

from memories.consolidation import consolidation_scan, consolidation_users
from memories.models import User


class Command(BaseCommand):
    help = (
        "Find near-duplicate active memories of a user in one scope (CONSOLIDATION_SIMILARITY) "
        "and memories not recalled or updated for CONSOLIDATION_STALE_DAYS, and propose merges "
        "and archivals as pending review items (/review/proposals, "
        "/api/admin/consolidation-proposals). Changes no memory; proposes nothing twice."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--user",
            action="append",
            default=[],
            metavar="USER",
            help="Only this user (username, external id or id); may be given several times.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="List what would be proposed; write nothing."
        )

    def handle(self, *args, user: list[str], dry_run: bool, **options):
        users = [self._user(name) for name in user] or None
        total = len(consolidation_users(users))
        with tqdm(total=total, unit="user", disable=options["verbosity"] == 0) as progress:
            result = consolidation_scan(users=users, dry_run=dry_run, progress=progress.update)
        for proposed in result.proposed:
            ids = ", ".join(str(memory.id) for memory in proposed.memories)
            self.stdout.write(f"{proposed.kind} [{ids}]: {proposed.reason}")
        counts = result.counts()
        verb = "Would propose" if dry_run else "Proposed"
        summary = f"{verb} {counts['merge']} merges and {counts['archive']} archivals"
        if not dry_run:
            summary += f"; withdrew {counts['withdrawn']} proposals their memories outgrew"
        self.stdout.write(self.style.SUCCESS(summary + "."))

    def _user(self, name: str) -> User:
        match = Q(username=name) | Q(external_id=name)
        try:
            match |= Q(id=uuid.UUID(name))
        except ValueError:
            pass
        found = User.objects.filter(match).first()
        if found is None:
            raise CommandError(f"No user {name!r} (a username, an external id or an id).")
        return found
