"""GET /api/ and GET /: where everything is. Absolute links (from the request's own scheme and
host) to the schema, the docs, the review pages, the admin, MCP and the API's collections, so
a client or a person starting from the bare address finds the rest. Open to anyone: it names
only what the README names too.

/api/ answers JSON. / answers the same JSON, or for a browser (Accept: text/html) a small
page of the same links."""

from django.conf import settings
from django.urls import get_script_prefix, reverse
from django.utils.cache import patch_vary_headers
from django.utils.html import format_html, format_html_join
from drf_spectacular.utils import extend_schema
from rest_framework import renderers, serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from rest.renderers import JSONRenderer

# MCP is mounted beside Django, at this path under the same script prefix (config/wsgi.py,
# memories/mcp_server.py), so it has no URL name to reverse.
MCP_PATH = "mcp"

# name in the answer: (URL name, what it is). The pages people and tools start from.
PAGES = {
    "schema": ("schema", "The OpenAPI 3 schema (YAML; ?format=json for JSON)."),
    "docs": ("docs", "Swagger UI over the schema; Authorize takes a key or token."),
    "review": ("review:dashboard", "The review pages (staff): pending memories, proposals."),
    "admin": ("admin:index", "Django's admin (staff)."),
    "mcp": (None, "The MCP server (streamable HTTP), with the same keys as the API."),
    "health": ("healthz", "Liveness: 200 while the process answers."),
    "ready": ("readyz", "Readiness: 200 once the service can answer requests."),
}
# The API's main collections and operations.
API = {
    "auth_token": ("auth-token", "POST a username and password for a user token."),
    "me": ("me", "The user the request acts as."),
    "memories": ("memory-list", "The user's memories: list (filters, pages) and create."),
    "memories_search": ("memory-search", "GET ?q=: the user's memories ranked for a query."),
    "memories_context": ("memory-context", "POST a query: a prompt hint and its memories."),
    "memories_batch": ("memory-batch", "POST several memories at once."),
    "memories_export": ("memory-export", "The user's memories as NDJSON."),
    "memories_import": ("memory-import", "POST NDJSON as exported."),
    "tools": ("tools", "The memory tools for a model's tool calling; POST tools/{name}."),
    "topics": ("topic-list", "Conversations (topics) and their messages."),
    "work_sessions": ("work-session-list", "Agent work sessions and their messages."),
    "projects": ("project-list", "Projects whose memories their members share."),
    "personas": ("persona-list", "Personas (assistants) memories can be kept per."),
    "extraction_runs": ("extraction-run-list", "Extraction runs and their results."),
    "users": ("user-list", "End users (a review key or staff)."),
    "pending_memories": ("admin-memory-pending", "Memories waiting for approval (staff)."),
    "consolidation_proposals": (
        "consolidation-proposal-list",
        "Merges of similar memories proposed for review (staff).",
    ),
    "retention_rules": (
        "retention-rule-list",
        "How long memories stay current, by scope and category (staff, review key).",
    ),
    "webhooks": ("webhook-list", "Signed event deliveries to a product (staff, review key)."),
}


def _links_serializer(name: str, table: dict) -> type[serializers.Serializer]:
    fields = {key: serializers.URLField(help_text=text) for key, (_, text) in table.items()}
    return type(name, (serializers.Serializer,), fields)


class ServiceRootSerializer(serializers.Serializer):
    service = serializers.CharField(help_text="The service's name.")
    version = serializers.CharField(help_text="The API's version.")
    links = _links_serializer("ServiceLinks", PAGES)()
    api = _links_serializer("ApiLinks", API)()


def _absolute(request, url_name: str | None) -> str:
    path = f"{get_script_prefix()}{MCP_PATH}" if url_name is None else reverse(url_name)
    return request.build_absolute_uri(path)


def service_root(request) -> dict:
    return {
        "service": settings.SPECTACULAR_SETTINGS["TITLE"],
        "version": settings.SPECTACULAR_SETTINGS["VERSION"],
        "links": {key: _absolute(request, name) for key, (name, _) in PAGES.items()},
        "api": {key: _absolute(request, name) for key, (name, _) in API.items()},
    }


class ApiRootView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [JSONRenderer]

    @extend_schema(
        operation_id="root_retrieve",
        summary="Links to the schema, docs, review pages, admin, MCP and the API",
        responses=ServiceRootSerializer,
        auth=[],
    )
    def get(self, request):
        return Response(service_root(request))


class LinksPageRenderer(renderers.BaseRenderer):
    """The root's links as a page with no script or style (the site's CSP allows neither
    inline)."""

    media_type = "text/html"
    format = "html"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        def items(table: dict, links: dict):
            return format_html_join(
                "\n",
                '<li><a href="{}">{}</a>: {}</li>',
                ((links[key], links[key], text) for key, (_, text) in table.items()),
            )

        return format_html(
            '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            "<title>{service}</title></head>\n<body>\n<h1>{service} {version}</h1>\n"
            "<ul>\n{pages}\n</ul>\n<h2>API</h2>\n<ul>\n{api}\n</ul>\n</body></html>\n",
            service=data["service"],
            version=data["version"],
            pages=items(PAGES, data["links"]),
            api=items(API, data["api"]),
        ).encode()


class SiteRootView(ApiRootView):
    """GET /: the same answer, as a page for a browser. Not in the schema (/api/ is)."""

    schema = None
    renderer_classes = [JSONRenderer, LinksPageRenderer]

    def handle_exception(self, exc):
        # Errors (a 405) are JSON whatever the client accepts, as everywhere in the API.
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        patch_vary_headers(response, ["Accept"])
        return response
