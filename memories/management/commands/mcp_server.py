"""Serve the memory tools over MCP: on stdio as one user, or over streamable HTTP at /mcp
with per-request authentication. Raises CommandError for an unknown user or a bad context."""

import anyio
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from config.serving import prepare_serving_process
from memories.accounts.keys import Principal, external_user_get_or_create
from memories.accounts.tenants import tenant_get_or_create
from memories.api.serializers import RecallContextSerializer
from memories.errors import ServiceError
from memories.mcp_server import Caller, serve_http, serve_stdio
from memories.models import User
from memories.tools import ToolContext, serializer_context

CONTEXT_OPTIONS = ("topic_id", "project_id", "persona_id", "work_session_id")


class Command(BaseCommand):
    help = (
        "Serve the tools memory_save, memory_recall, memory_context and memory_forget over "
        "the Model Context Protocol. stdio (the default) acts as one user with every scope: "
        "give --user NAME or --external-user ID, and optionally --topic-id, --project-id, "
        "--persona-id or --work-session-id as the context of every call. --http serves "
        "streamable HTTP at http://HOST:PORT/mcp; each request authenticates as on the REST "
        "API (Authorization: Bearer <key> with X-User-Id, or Token <token>) and names its "
        "context with the URL's query parameters topic_id, project_id, persona_id, "
        "work_session_id."
    )

    def add_arguments(self, parser):
        who = parser.add_mutually_exclusive_group()
        who.add_argument("--user", help="stdio: act as the user with this username.")
        who.add_argument(
            "--external-user",
            help="stdio: act as the end user with this external id (X-User-Id of the REST "
            "API); created on first use when AUTO_PROVISION_USERS is on.",
        )
        parser.add_argument(
            "--tenant",
            default="default",
            help="stdio: the tenant of --external-user (a slug; default 'default').",
        )
        for option in CONTEXT_OPTIONS:
            parser.add_argument(
                "--" + option.replace("_", "-"),
                help=f"stdio: the {option.removesuffix('_id').replace('_', ' ')} every call "
                "is made in (its id).",
            )
        parser.add_argument(
            "--http", action="store_true", help="Serve streamable HTTP at /mcp instead of stdio."
        )
        parser.add_argument("--host", default="127.0.0.1", help="--http: address to bind.")
        parser.add_argument("--port", type=int, default=8001, help="--http: port to bind.")

    def handle(self, *args, http: bool, host: str, port: int, **options):
        given_context = {name: options[name] for name in CONTEXT_OPTIONS if options[name]}
        if http:
            if options["user"] or options["external_user"] or given_context:
                raise CommandError(
                    "--http authenticates every request and takes its context from the URL; "
                    "--user, --external-user and the context options are for stdio."
                )
            self.stderr.write(f"Serving MCP over streamable HTTP at http://{host}:{port}/mcp")
            # The model loaded before it listens, so /readyz is 200 once it does.
            prepare_serving_process()
            serve_http(host=host, port=port)
            return
        user = self._user(
            username=options["user"],
            external_id=options["external_user"],
            tenant=options["tenant"],
        )
        caller = Caller(principal=Principal(user=user), context=self._context(user, given_context))
        # stdout carries the protocol from here on; anything else goes to stderr. The
        # connection of this thread is closed: from now on only worker threads use the ORM.
        self.stderr.write(f"Serving MCP on stdio as {user.username}")
        connections.close_all()
        anyio.run(serve_stdio, caller)

    def _user(self, *, username: str | None, external_id: str | None, tenant: str) -> User:
        if external_id is not None:
            try:
                user, _ = external_user_get_or_create(
                    external_id=external_id,
                    provision=settings.AUTO_PROVISION_USERS,
                    tenant=tenant_get_or_create(slug=tenant),
                )
            except ServiceError as error:
                raise CommandError(f"--external-user: {error.detail}") from None
        elif username is not None:
            named = User.objects.filter(username=username).first()
            if named is None:
                raise CommandError(f"--user: no user named {username!r}.")
            user = named
        else:
            raise CommandError("Name who the tools act for: --user NAME or --external-user ID.")
        if not user.is_active:
            raise CommandError(f"The user {user.username!r} is deactivated.")
        return user

    def _context(self, user: User, given: dict[str, str]) -> ToolContext:
        validator = RecallContextSerializer(data=given, context=serializer_context(user))
        if not validator.is_valid():
            problems = "; ".join(
                f"--{name.replace('_', '-')}: {' '.join(str(m) for m in messages)}"
                for name, messages in validator.errors.items()
            )
            raise CommandError(problems)
        return ToolContext(**validator.validated_data)
