"""Create a service key for a product backend and print it (once: only its hash is kept)."""

from django.core.management.base import BaseCommand, CommandError

from memories.accounts.keys import api_key_create
from memories.accounts.tenants import tenant_get_or_create
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
        parser.add_argument(
            "--tenant",
            default="default",
            help="The product the key serves (a slug, created if new; default 'default'). "
            "A key reads, writes and administers its tenant's end users only.",
        )

    def handle(self, *args, name: str, scopes: str, tenant: str, **options):
        try:
            key, raw_key = api_key_create(
                name=name, scopes=scopes.split(","), tenant=tenant_get_or_create(slug=tenant)
            )
        except ServiceError as error:
            raise CommandError(f"{error.field}: {error.detail}") from None
        self.stderr.write(
            f"Created API key {key.name!r} ({key.prefix}…) of tenant {key.tenant.slug!r} with "
            f"scopes {', '.join(key.scopes)}. Store it now: it is not shown again."
        )
        self.stdout.write(raw_key)
