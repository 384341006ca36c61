"""GET and PUT /api/extraction-settings: how extraction works for a tenant's users, or for one
project within it (`?project_id=`), for keys with the review scope and staff. The answer
also gives the settings in force (`effective`: a project's added to its tenant's,
extraction/steering.py). A local staff login names the tenant (`?tenant=<slug>`, default
"default"); a review key reaches its own tenant only."""

import re

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from extraction import steering
from extraction.models import ExtractionSettings
from memories.accounts.tenants import default_tenant
from memories.errors import NotFound
from memories.models import ApiKeyScope, Project, Tenant
from rest.fields import StrictInputMixin, trimmed_char
from rest.inputs import caller, parse_uuid, validated
from rest.permissions import KeyHasScope

SLUG = re.compile(r"[-a-zA-Z0-9_]{1,50}")


def _named_serializer(title: str, name: str, max_length: int) -> type[serializers.Serializer]:
    """A {<name>, description} item of the settings' lists (categories, keys)."""
    fields = {
        name: trimmed_char(max_length),
        "description": trimmed_char(
            steering.DESCRIPTION_MAX_CHARS, required=False, allow_blank=True, default=""
        ),
    }
    return type(f"{title}Serializer", (StrictInputMixin, serializers.Serializer), fields)


CategorySerializer = _named_serializer("Category", "name", settings.MEMORY_CATEGORY_MAX_LENGTH)
KeySerializer = _named_serializer("Key", "key", settings.MEMORY_KEY_MAX_LENGTH)


class ExtractionSettingsSerializer(StrictInputMixin, serializers.Serializer):
    instructions = serializers.CharField(
        max_length=steering.INSTRUCTIONS_MAX_CHARS,
        allow_blank=True,
        required=False,
        default="",
        help_text="What to remember and what never to keep, in the product's words. The "
        "model reads it as data: it cannot change the answer's shape.",
    )
    categories = serializers.ListField(
        child=CategorySerializer(),
        max_length=steering.CATEGORIES_MAX,
        required=False,
        default=list,
        help_text="The categories memories go in; a proposal in another goes in the nearest "
        "of these. Empty: the model's own (a project's empty list keeps its tenant's).",
    )
    keys = serializers.ListField(
        child=KeySerializer(),
        max_length=steering.KEYS_MAX,
        required=False,
        default=list,
        help_text="The vocabulary of fact keys the model reuses. Empty: the service's "
        "defaults (a project's keys join its tenant's).",
    )
    language = trimmed_char(
        steering.LANGUAGE_MAX_CHARS,
        required=False,
        allow_blank=True,
        default="",
        help_text='"": each memory in the language the user wrote it in; else the language '
        "to write every memory in.",
    )
    exclude = serializers.ListField(
        child=serializers.ChoiceField(choices=sorted(steering.EXCLUSIONS)),
        required=False,
        default=list,
        help_text="Classes of data never kept, asked of the model and checked again on its "
        "answer where a pattern can tell. A tenant without settings excludes payment_cards, "
        "bank_accounts, government_ids and passwords; a project's join its tenant's.",
    )

    def validate_categories(self, value):
        return _unique(value, "name", "categories")

    def validate_keys(self, value):
        return _unique(value, "key", "keys")

    def validate_exclude(self, value):
        return sorted(set(value))


def _unique(items: list[dict], name: str, field: str) -> list[dict]:
    seen = set()
    for item in items:
        folded = item[name].casefold()
        if folded in seen:
            raise serializers.ValidationError(f"{item[name]!r} is listed twice.")
        seen.add(folded)
    return items


class ExtractionSettingsAnswerSerializer(ExtractionSettingsSerializer):
    tenant = serializers.CharField(help_text="The tenant's slug.")
    project_id = serializers.UUIDField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True, help_text="null: never set.")
    effective = serializers.DictField(
        help_text="The settings in force for this tenant (and project): instructions, "
        "categories, keys, language, exclude."
    )


_PARAMETERS = [
    OpenApiParameter("project_id", OpenApiTypes.UUID, description="A project of the tenant."),
    OpenApiParameter(
        "tenant", OpenApiTypes.STR, description="Staff logins without a tenant: its slug."
    ),
]


class ExtractionSettingsView(APIView):
    """The extraction settings of the caller's tenant, or of one of its projects."""

    # The key's scope is checked before staff, so a key without review hears which it lacks.
    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True

    def _level(self, request) -> tuple[Tenant, Project | None]:
        actor = caller(request)
        tenant: Tenant | None
        if actor.tenant is not None:
            tenant = actor.tenant
        elif not request.query_params.get("tenant"):
            tenant = default_tenant()
        else:
            slug = request.query_params["tenant"]
            # A slug is letters, digits, - and _: anything else names no tenant (and a NUL
            # would not even reach the database).
            found = SLUG.fullmatch(slug) and Tenant.objects.filter(slug=slug).first()
            if not found:
                raise NotFound(f"No tenant {slug[:60]!r}.", field="tenant")
            tenant = found
        raw = request.query_params.get("project_id")
        if not raw:
            return tenant, None
        project_id = parse_uuid(raw, field="project_id", what="project")
        project = Project.objects.filter(id=project_id, owner__tenant=tenant).first()
        if project is None:
            raise NotFound("No project of this tenant has this id.", field="project_id")
        return tenant, project

    def _answer(self, tenant: Tenant, project: Project | None) -> Response:
        row = ExtractionSettings.objects.filter(tenant=tenant, project=project).first()
        steered = steering.steering_for(
            tenant_id=tenant.id, project_id=project.id if project else None
        )
        body = {
            "tenant": tenant.slug,
            "project_id": project.id if project else None,
            "instructions": row.instructions if row else "",
            "categories": row.categories if row else [],
            "keys": row.keys if row else [],
            "language": row.language if row else "",
            "exclude": row.exclude if row else [],
            "updated_at": row.updated_at if row else None,
            "effective": {
                "instructions": steered.instructions,
                "categories": [{"name": n, "description": d} for n, d in steered.categories],
                "keys": [{"key": k, "description": d} for k, d in steered.keys],
                "language": steered.language,
                "exclude": sorted(steered.exclude),
            },
        }
        return Response(ExtractionSettingsAnswerSerializer(body).data)

    @extend_schema(parameters=_PARAMETERS, responses=ExtractionSettingsAnswerSerializer)
    def get(self, request):
        return self._answer(*self._level(request))

    @extend_schema(
        parameters=_PARAMETERS,
        request=ExtractionSettingsSerializer,
        responses=ExtractionSettingsAnswerSerializer,
    )
    def put(self, request):
        tenant, project = self._level(request)
        fields = validated(ExtractionSettingsSerializer, request)
        steering.settings_save(tenant=tenant, project=project, fields=fields)
        return self._answer(tenant, project)
