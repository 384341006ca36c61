"""Create a service key for a product backend and print it (once: only its hash is kept)."""

from django.core.management.base import BaseCommand, CommandError

from memories.api_keys import api_key_create
from memories.errors import ServiceError


class Command(BaseCommand):
    help = (
        "Create an API key. Requests send 'Authorization: Bearer <key>' and 'X-User-Id: "
        "<external user id>'. The key is printed once and cannot be shown again."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="What the key is for, e.g. 'chat backend'.")
        parser.add_argument(
            "--scopes",
            default="read,write",
            help="Comma-separated: read, write, review (default read,write).",
        )

    def handle(self, *args, name: str, scopes: str, **options):
        try:
            key, raw_key = api_key_create(name=name, scopes=scopes.split(","))
        except ServiceError as error:
            raise CommandError(f"{error.field}: {error.detail}") from None
        self.stderr.write(
            f"Created API key {key.name!r} ({key.prefix}…) with scopes {', '.join(key.scopes)}. "
            "Store it now: it is not shown again."
        )
        self.stdout.write(raw_key)
