"""Run one extraction scan by hand (what Celery beat runs periodically)."""

from django.core.management.base import BaseCommand

from extraction.triggers import scan_extractions


class Command(BaseCommand):
    help = "Find conversations and work sessions with enough new activity and queue extraction."

    def add_arguments(self, parser):
        parser.add_argument("--limit", type=int, default=500)

    def handle(self, *args, limit: int, **options):
        queued = scan_extractions(limit=limit)
        self.stdout.write(
            f"Queued {queued['topics']} conversations and {queued['work_sessions']} work sessions."
        )
