"""Revoke an API key for good, by its prefix (the first 12 characters) or its id."""

from uuid import UUID

from django.core.management.base import BaseCommand, CommandError

from memories.accounts.keys import api_key_revoke
from memories.models import ApiKey


class Command(BaseCommand):
    help = "Revoke an API key, named by its prefix (first 12 characters) or id."

    def add_arguments(self, parser):
        parser.add_argument("key", help="The key's prefix, e.g. mem_AbC123xy, or its id.")

    def handle(self, *args, key: str, **options):
        try:
            matches = ApiKey.objects.filter(id=UUID(key))
        except ValueError:
            matches = ApiKey.objects.filter(prefix=key[:12])
        found = list(matches[:2])
        if not found:
            raise CommandError(f"No API key {key!r}.")
        if len(found) > 1:
            raise CommandError(f"Several keys start with {key!r}; give the id.")
        if api_key_revoke(key=found[0]):
            self.stdout.write(f"Revoked {found[0]}.")
        else:
            self.stdout.write(f"{found[0]} was revoked already.")
