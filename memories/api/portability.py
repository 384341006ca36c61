"""A user's data: GET /api/memories/export (NDJSON, streamed), POST
/api/memories/import (NDJSON, read as a stream) and POST /api/memories/{id}/restore. What is
kept and how lines are matched: memories.portability.importing."""

import contextlib
import io
import json
import tempfile
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from django.utils.http import parse_header_parameters
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from memories import services
from memories.api.fields import FilterTextField, MetadataField, ScopeField
from memories.api.serializers import EntityMentionSerializer
from memories.carriers import carrier_errors
from memories.errors import ServiceError
from memories.models import Memory, Scope, Source, Status
from memories.portability import exporting, importing, ndjson
from memories.representations import MemorySerializer
from rest.fields import (
    PastDateTimeField,
    StrictBooleanField,
    StrictInputMixin,
    StrictUUIDField,
    UnitFloatField,
    trimmed_char,
)
from rest.inputs import parse_uuid, validated
from rest.parsers import holds_lone_surrogate
from rest.request_body import DechunkedInput, is_dechunked

NDJSON = "application/x-ndjson"


class UnsupportedMediaType(ServiceError):
    status_code = 415
    code = "unsupported_media_type"


class NDJSONParser(BaseParser):
    """Declares the body type. The import view reads request.stream line by line itself, so
    a large body is never parsed, or held, whole."""

    media_type = NDJSON

    def parse(self, stream, media_type=None, parser_context=None):
        return stream


class FirstRendererNegotiation(BaseContentNegotiation):
    """The export answers NDJSON whatever Accept asks for (no 406 for application/x-ndjson);
    its errors are JSON, as everywhere in the API."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


# --- Serializers -------------------------------------------------------------------------------


class MemoryExportSerializer(MemorySerializer):
    """One line of an export: the memory object plus deleted_at and the entities it is about
    (name, kind, relation, aliases), which an import links again."""

    entities = serializers.SerializerMethodField()

    class Meta(MemorySerializer.Meta):
        fields = [*MemorySerializer.Meta.fields, "deleted_at", "entities"]
        read_only_fields = fields

    @extend_schema_field(EntityMentionSerializer(many=True))
    def get_entities(self, memory) -> list[dict]:
        # Prefetched by exporting.memories_for_export.
        return [
            {
                "name": entity.name,
                "kind": entity.kind,
                "relation": entity.relation,
                "aliases": entity.aliases,
            }
            for entity in memory.entities.all()
        ]


class ExportParamsSerializer(StrictInputMixin, serializers.Serializer):
    include_deleted = serializers.BooleanField(
        default=False, help_text="Also export soft-deleted memories (with deleted_at set)."
    )
    filter = FilterTextField(
        required=False,
        help_text=(
            "Only memories this filter matches: a filter object's JSON text (docs/api.md, "
            "Filters)."
        ),
    )


class ImportParamsSerializer(StrictInputMixin, serializers.Serializer):
    dry_run = serializers.BooleanField(
        default=False, help_text="Write nothing; answer what a real import would do."
    )


def optional_uuid() -> StrictUUIDField:
    return StrictUUIDField(required=False, allow_null=True)


def optional_time() -> PastDateTimeField:
    return PastDateTimeField(required=False, allow_null=True)


class ExportedEntitySerializer(EntityMentionSerializer):
    aliases = serializers.ListField(child=trimmed_char(200), required=False, max_length=50)


class MemoryImportLineSerializer(StrictInputMixin, serializers.Serializer):
    """One line of an import: a memory object as the export writes it. owner_id, user_id,
    external_user_id, supersedes_id, the extraction provenance (source_topic_id,
    source_work_session_id, source_message_ids: conversations are not imported) and what the
    exporter's retention rules gave it (retention_expires_at, retention_rule_id) are accepted
    and ignored; other unknown fields are refused, so a typo is not silently dropped."""

    tolerated_fields = (
        "owner_id",
        "user_id",
        "external_user_id",
        "supersedes_id",
        "source_topic_id",
        "source_work_session_id",
        "source_message_ids",
        # The importer's retention rules give these again.
        "retention_expires_at",
        "retention_rule_id",
    )

    id = optional_uuid()
    scope = ScopeField(default=Scope.USER)
    persona_id = optional_uuid()
    project_id = optional_uuid()
    topic_id = optional_uuid()
    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH)
    category = trimmed_char(settings.MEMORY_CATEGORY_MAX_LENGTH, allow_blank=True, default="")
    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Field.source.
    source = serializers.ChoiceField(  # type: ignore[assignment]
        choices=Source.choices, default=Source.MANUAL
    )
    source_channel_id = optional_uuid()
    importance = UnitFloatField(default=0.5)
    confidence = UnitFloatField(default=1.0)
    status = serializers.ChoiceField(choices=Status.choices, default=Status.ACTIVE)
    pinned = StrictBooleanField(default=False)
    metadata = MetadataField(required=False)
    access_count = serializers.IntegerField(min_value=0, max_value=2**31 - 1, default=0)
    last_accessed_at = optional_time()
    created_at = optional_time()
    updated_at = optional_time()
    deleted_at = optional_time()
    valid_from = optional_time()
    valid_until = optional_time()
    # Passed or not, as the export wrote it: an active memory whose time has passed is
    # left out of recall at once and archived by the next retention sweep.
    expires_at = serializers.DateTimeField(required=False, allow_null=True)
    superseded_by_id = optional_uuid()
    entities = serializers.ListField(
        child=ExportedEntitySerializer(), required=False, max_length=20
    )

    def validate(self, attrs):
        scope = attrs["scope"]
        # The carriers the scope needs (the user is the importer); the others must be null.
        checked = ("persona", "project", "topic")
        given = ["user", *(name for name in checked if attrs.get(f"{name}_id"))]
        errors = {
            field: [message]
            for field, message in carrier_errors(scope, given=given, checked=checked).items()
        }
        if attrs.get("valid_until") and attrs.get("status", Status.ACTIVE) != Status.ARCHIVED:
            errors["valid_until"] = ["Only an archived memory stopped being current."]
        elif (
            attrs.get("valid_from")
            and attrs.get("valid_until")
            and attrs["valid_until"] < attrs["valid_from"]
        ):
            errors["valid_until"] = ["Must not be before valid_from."]
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class LineErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(help_text="Line number in the body, counted from 1.")
    field = serializers.CharField(help_text="The field at fault, or non_field_errors.")
    detail = serializers.CharField()


class ImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    superseded = serializers.IntegerField(
        help_text="Current memories archived because a line gave their key another value."
    )
    # A declared field, which the metaclass moves into the fields; the stubs take it for
    # an override of Serializer.errors.
    errors = LineErrorSerializer(many=True, source="listed_errors")  # type: ignore[assignment]


# --- Reading the import body -------------------------------------------------------------------


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def import_lines(
    raw_lines: Iterator[tuple[int, bytes]], *, request
) -> Iterator[importing.ImportLine | importing.InvalidLine]:
    """Each line decoded and validated; a bad one becomes an InvalidLine naming its fields."""
    # One serializer for every line: building one costs about a millisecond.
    serializer = MemoryImportLineSerializer(context={"request": request})
    for number, raw in raw_lines:
        yield _import_line(number, raw, serializer=serializer)


def _first_message(messages: object) -> str:
    """A field's first error. The line's fields are flat, so each field's errors are a list;
    anything else (a nested field's dict) is shown whole."""
    return str(messages[0] if isinstance(messages, list) else messages)


def _import_line(
    number: int, raw: bytes, *, serializer: MemoryImportLineSerializer
) -> importing.ImportLine | importing.InvalidLine:
    def invalid(detail: str) -> importing.InvalidLine:
        return importing.InvalidLine(
            number, [importing.LineError(number, "non_field_errors", detail)]
        )

    max_line_bytes = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if len(raw) > max_line_bytes:
        return invalid(f"The line is longer than {max_line_bytes} bytes.")
    try:
        data = json.loads(raw.decode("utf-8-sig"), parse_constant=_refuse_constant)
    except UnicodeDecodeError:
        return invalid("The line is not UTF-8 text.")
    except json.JSONDecodeError as error:
        return invalid(f"Not valid JSON: {error.msg} (column {error.colno}).")
    except ValueError as error:
        return invalid(f"Not valid JSON: {error}.")
    except RecursionError:
        return invalid("Not valid JSON: nested too deeply.")
    if not isinstance(data, dict):
        return invalid("Expected a JSON object (one memory per line).")
    if holds_lone_surrogate(data):
        return invalid(
            "The line holds a lone surrogate (an escape in \\ud800-\\udfff without its pair), "
            "which is not text."
        )
    try:
        fields = serializer.run_validation(data)
    except serializers.ValidationError as error:
        detail: dict[Any, Any] = (
            error.detail if isinstance(error.detail, dict) else {"non_field_errors": error.detail}
        )
        return importing.InvalidLine(
            number,
            [
                importing.LineError(number, str(name), _first_message(messages))
                for name, messages in detail.items()
            ],
        )
    entities = tuple(dict(entity) for entity in fields.pop("entities", ()))
    return importing.ImportLine(number=number, entities=entities, **fields)


@contextlib.contextmanager
def import_body(request):
    """The body as a stream. With Content-Length, DRF's stream (the middleware refused it
    over IMPORT_MAX_BYTES). A chunked body has no Content-Length: the middleware let it
    through only when the server de-chunked it (gunicorn); it is spooled to a temporary file
    first, counting, so that one over the limit or with broken framing is refused before any
    line is written."""
    if request.stream is not None:
        yield request.stream
        return
    if not is_dechunked(request):  # no Content-Length, not chunked: no body
        yield io.BytesIO()
        return
    # Django reads no further than a Content-Length, so it would see an empty body.
    raw = DechunkedInput(request.META["wsgi.input"])
    with tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE) as body:
        for block in ndjson.read_blocks(raw, max_bytes=settings.IMPORT_MAX_BYTES):
            body.write(block)
        body.seek(0)
        yield body


def require_ndjson(request) -> None:
    media_type, _ = parse_header_parameters(request.content_type or "")
    if media_type != NDJSON:
        detail = (
            f"Send the memories as NDJSON, one JSON object per line, with Content-Type: "
            f"{NDJSON} (got {media_type or 'none'!r})."
        )
        raise UnsupportedMediaType(detail, field="body")


def export_response(
    memories: QuerySet[Memory], *, request, filename: str = "memories.ndjson"
) -> StreamingHttpResponse:
    """The memories (exporting.memories_for_export) as an NDJSON download, a line each as
    MemoryExportSerializer writes it, streamed: the API's export and the review pages'."""
    # One serializer for every row: building one costs about a millisecond.
    serializer = MemoryExportSerializer(context={"request": request})

    def line_of(memory) -> str:
        data = serializer.to_representation(memory)
        return json.dumps(data, cls=JSONEncoder, ensure_ascii=False, separators=(",", ":"))

    response = StreamingHttpResponse(
        exporting.export_lines(memories, line_of=line_of), content_type=NDJSON
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Views -------------------------------------------------------------------------------------


class ExportView(APIView):
    """Every memory of the caller as NDJSON, one per line, streamed."""

    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        parameters=[ExportParamsSerializer],
        responses={
            (200, NDJSON): OpenApiResponse(
                MemoryExportSerializer,
                description="One memory object per line (every status), oldest first.",
            )
        },
    )
    def get(self, request):
        params = validated(ExportParamsSerializer, request, data=request.query_params.dict())
        memories = exporting.memories_for_export(
            user=request.user,
            include_deleted=params["include_deleted"],
            memory_filter=params.get("filter"),
        )
        return export_response(memories, request=request)


class ImportView(APIView):
    """Import an export (of this or another account) into the caller's memories."""

    parser_classes = [NDJSONParser]
    # The middleware checks Content-Length against this setting instead of the API's 1 MiB.
    body_limit_setting = "IMPORT_MAX_BYTES"

    @extend_schema(
        parameters=[ImportParamsSerializer],
        request={NDJSON: MemoryImportLineSerializer},
        responses=ImportResultSerializer,
        examples=[
            OpenApiExample(
                "Two lines",
                value=(
                    '{"key": "language", "value": "Go with Gin", "category": "tech"}\n'
                    '{"id": "8d2c5f0e-0f5c-4a43-9a52-2f1f5a3b6c7d", "key": "city", '
                    '"value": "Lives in Lisbon", "status": "pending_review"}'
                ),
                request_only=True,
                media_type=NDJSON,
            )
        ],
    )
    def post(self, request):
        params = validated(ImportParamsSerializer, request, data=request.query_params.dict())
        require_ndjson(request)
        with import_body(request) as body:
            raw_lines = ndjson.ndjson_lines(
                body,
                max_bytes=settings.IMPORT_MAX_BYTES,
                max_line_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            )
            result = importing.memory_import(
                actor=request.user,
                lines=import_lines(raw_lines, request=request),
                dry_run=params["dry_run"],
            )
        return Response(ImportResultSerializer(result).data)


class RestoreView(APIView):
    """Bring a soft-deleted memory of the caller back, active."""

    @extend_schema(request=None, responses=MemorySerializer)
    def post(self, request, pk: str):
        memory = services.memory_restore(
            memory_id=parse_uuid(pk, what="memory"), actor=request.user
        )
        return Response(MemorySerializer(memory, context={"request": request}).data)
