"""The REST contract, as docs/api.md lists it. Each view validates, calls one service or
selector, and serialises; errors are raised and shaped by rest.errors."""

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny, IsAdminUser, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import saving, selectors, services, tools
from memories.api.filters import MemoryFilter
from memories.api.schema import tool_arguments_schema
from memories.api.serializers import (
    ApprovedCountSerializer,
    BulkReviewSerializer,
    ContextRequestSerializer,
    ContextResponseSerializer,
    CountSerializer,
    ExplainedContextSerializer,
    ExplainedSearchSerializer,
    ExplanationSerializer,
    ForgottenSerializer,
    MemoryBatchCreateSerializer,
    MemoryCreateSerializer,
    MemoryUpdateSerializer,
    PendingParamsSerializer,
    RecallContextSerializer,
    RecallResultSerializer,
    RecallResultsSerializer,
    RejectedCountSerializer,
    RevisionSerializer,
    SavedMemorySerializer,
    SavedSerializer,
    SearchParamsSerializer,
    TokenRequestSerializer,
    TokenSerializer,
    ToolListSerializer,
)
from memories.errors import InvalidInput
from memories.filters.compile import filter_condition
from memories.models import (
    ApiKeyScope,
    Memory,
    RevisionAction,
    Status,
)
from memories.recall.hint import memory_hint, memory_hint_explained, profile_of
from memories.recall.query import query_for_recall
from memories.recall.recall import memory_recall, memory_recall_explained
from memories.recall.scopes import recall_scopes
from memories.representations import MemorySerializer, ProfileSerializer, profile_summary_data
from ops import timing, usage
from ops.models import UsageKind
from rest.inputs import caller, parse_uuid, validated
from rest.permissions import KeyHasScope


def scopes_for(request, data: dict):
    return recall_scopes(
        user=request.user,
        topic=data.get("topic"),
        project=data.get("project"),
        persona=data.get("persona"),
        work_session=data.get("work_session"),
    )


class TokenView(APIView):
    """Exchange a username and password for an API token."""

    permission_classes = [AllowAny]
    authentication_classes = []

    @extend_schema(request=TokenRequestSerializer, responses=TokenSerializer)
    def post(self, request):
        data = validated(TokenRequestSerializer, request)
        # Django's own request, not DRF's wrapper: django-axes marks a locked-out login on
        # it, and its middleware then answers 429 (config/login_throttle.py).
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None:
            raise InvalidInput("Wrong username or password.", field="password")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})


BATCH_SAVED = inline_serializer("MemoryBatchSaved", {"data": SavedMemorySerializer(many=True)})


class MemoryViewSet(viewsets.GenericViewSet):
    serializer_class = MemorySerializer
    filterset_class = MemoryFilter
    lookup_value_regex = "[^/]+"

    @property
    def key_scope(self) -> str | None:
        # Recall is a read, though the hint is asked for with POST.
        return ApiKeyScope.READ if self.action in ("search", "context") else None

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return Memory.objects.none()
        return selectors.memories_visible_to(self.request.user).order_by("-created_at", "-id")

    def get_object(self):
        memory_id = parse_uuid(self.kwargs["pk"], what="memory")
        return selectors.memory_get(user=self.request.user, memory_id=memory_id)

    def _respond(self, memory, status_code=status.HTTP_200_OK):
        return Response(
            MemorySerializer(memory, context={"request": self.request}).data, status=status_code
        )

    def list(self, request):
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(
            MemorySerializer(page, many=True, context={"request": request}).data
        )

    @extend_schema(
        request=MemoryCreateSerializer,
        responses={
            201: OpenApiResponse(SavedMemorySerializer, description="A new memory was written."),
            200: OpenApiResponse(
                SavedMemorySerializer,
                description="A current memory had this key and value already: it is answered.",
            ),
        },
    )
    def create(self, request):
        data = validated(MemoryCreateSerializer, request)
        saved = saving.memory_save_manual(actor=request.user, **data)
        return Response(
            SavedMemorySerializer(saved, context={"request": request}).data,
            status=status.HTTP_201_CREATED if saved.created else status.HTTP_200_OK,
        )

    @extend_schema(
        request=MemoryBatchCreateSerializer,
        responses={
            201: OpenApiResponse(BATCH_SAVED, description="At least one item wrote a new memory."),
            200: OpenApiResponse(
                BATCH_SAVED, description="Every item was said by a current memory already."
            ),
        },
    )
    @action(detail=False, methods=["post"], filterset_class=None, pagination_class=None)
    def batch(self, request):
        items = validated(MemoryBatchCreateSerializer, request)["memories"]
        answers = saving.memory_save_manual_batch(actor=request.user, items=items)
        data = SavedMemorySerializer(answers, many=True, context={"request": request}).data
        created = any(answer.created for answer in answers)
        return Response(
            {"data": data}, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    def retrieve(self, request, pk=None):
        return self._respond(self.get_object())

    @extend_schema(request=MemoryUpdateSerializer, responses=MemorySerializer)
    def update(self, request, pk=None):
        memory = self.get_object()
        changes = dict(validated(MemoryUpdateSerializer, request, context={"memory": memory}))
        return self._respond(
            services.memory_update(
                memory=memory,
                actor=request.user,
                changes=changes,
                merge_metadata=request.method == "PATCH",
            )
        )

    @extend_schema(request=MemoryUpdateSerializer, responses=MemorySerializer)
    def partial_update(self, request, pk=None):
        return self.update(request, pk)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        services.memory_delete(memory=self.get_object(), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    def _review(self, decision: str):
        [memory] = services.memory_review(
            memory_ids=[self.get_object().id],
            actor=caller(self.request),
            decision=decision,
            require_pending=True,
        )
        return self._respond(memory)

    @extend_schema(request=None, responses=MemorySerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        return self._review(RevisionAction.APPROVE)

    @extend_schema(request=None, responses=MemorySerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        return self._review(RevisionAction.REJECT)

    @extend_schema(responses=RevisionSerializer(many=True))
    @action(detail=True, methods=["get"], filterset_class=None)
    def history(self, request, pk=None):
        memory_id = parse_uuid(pk, what="memory")
        revisions = selectors.memory_history(user=request.user, memory_id=memory_id)
        page = self.paginate_queryset(revisions)
        return self.get_paginated_response(RevisionSerializer(page, many=True).data)

    @extend_schema(parameters=[SearchParamsSerializer], responses=ExplainedSearchSerializer)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    @usage.counts(UsageKind.SEARCH)
    def search(self, request):
        params = validated(SearchParamsSerializer, request, data=request.query_params.dict())
        recalled = dict(
            query=query_for_recall(params["q"]),
            scopes=scopes_for(request, params),
            top_k=params["top_k"],
            as_of=params.get("as_of"),
            min_relevance=params.get("min_relevance"),
            memory_filter=params.get("filter"),
        )
        if params["explain"]:
            hits, explanation = memory_recall_explained(**recalled, whole_query=params["q"])
        else:
            hits, explanation = memory_recall(**recalled), None
        context = {"request": request}
        with timing.stage("serialize"):
            body = {"data": RecallResultSerializer(hits, many=True, context=context).data}
            if explanation is not None:
                body["explanation"] = ExplanationSerializer(explanation, context=context).data
        return Response(body)

    @extend_schema(request=ContextRequestSerializer, responses=ExplainedContextSerializer)
    @action(detail=False, methods=["post"], filterset_class=None, pagination_class=None)
    @usage.counts(UsageKind.CONTEXT)
    def context(self, request):
        data = validated(ContextRequestSerializer, request)
        profile = profile_of(request.user.id) if data["profile"] else None
        hinted = dict(
            query=data["query"],
            scopes=scopes_for(request, data),
            top_k=data["top_k"],
            budget=settings.MEMORY_HINT_BUDGET_CHARS,
            as_of=data.get("as_of"),
            profile=profile,
            memory_filter=data.get("filter"),
        )
        explanation = None
        if data["explain"]:
            hint, used, explanation = memory_hint_explained(**hinted)
        else:
            hint, used = memory_hint(**hinted)
        context = {"request": request}
        memories = RecallResultSerializer(used, many=True, context=context).data
        body = {"hint": hint, "memories": memories, "profile": profile_summary_data(profile)}
        if explanation is not None:
            body["explanation"] = ExplanationSerializer(explanation, context=context).data
        return Response(body)

    @extend_schema(responses=CountSerializer)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    def count(self, request):
        return Response(selectors.memory_counts(user=request.user))


class AdminMemoryViewSet(viewsets.GenericViewSet):
    """Staff review across all users."""

    # The key's scope is checked before staff, so a key without review hears which it lacks.
    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    serializer_class = MemorySerializer
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True
    # The pending list's filter (PendingParamsSerializer), besides the page's parameters.
    list_query_params = ("filter",)

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return Memory.objects.none()
        return selectors.pending_memories(actor=self.request.user)

    @extend_schema(
        parameters=[PendingParamsSerializer], responses=MemorySerializer(many=True)
    )
    @action(detail=False, methods=["get"])
    def pending(self, request):
        memories = self.get_queryset().select_related("user")
        params = validated(PendingParamsSerializer, request, data=request.query_params.dict())
        if params.get("filter") is not None:
            memories = memories.filter(filter_condition(params["filter"]))
        page = self.paginate_queryset(memories)
        return self.get_paginated_response(
            MemorySerializer(page, many=True, context={"request": request}).data
        )

    def _bulk_review(self, decision: str) -> int:
        data = validated(BulkReviewSerializer, self.request)
        # Only memories of users and personas this reviewer administers (another tenant's
        # are skipped, as ids that are not pending are).
        chosen = Memory.objects.filter(selectors.memories_administered_by(caller(self.request)))
        if data.get("filter") is not None:
            chosen = chosen.filter(
                filter_condition(data["filter"]), status=Status.PENDING_REVIEW
            )
        if "ids" in data:
            administered = set(chosen.filter(id__in=data["ids"]).values_list("id", flat=True))
            ids = [memory_id for memory_id in data["ids"] if memory_id in administered]
        else:
            ids = list(
                chosen.order_by("created_at", "id").values_list("id", flat=True)[
                    : settings.BULK_IDS_MAX
                ]
            )
        changed = services.memory_review(
            memory_ids=ids, actor=caller(self.request), decision=decision
        )
        return len(changed)

    @extend_schema(request=BulkReviewSerializer, responses=ApprovedCountSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-approve")
    def bulk_approve(self, request):
        return Response({"approved": self._bulk_review(RevisionAction.APPROVE)})

    @extend_schema(request=BulkReviewSerializer, responses=RejectedCountSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-reject")
    def bulk_reject(self, request):
        return Response({"rejected": self._bulk_review(RevisionAction.REJECT)})


class ToolListView(APIView):
    """The AI tools in OpenAI's function-calling format (strict mode), from memories.tools."""

    @extend_schema(operation_id="tools_list", responses=ToolListSerializer)
    def get(self, request):
        return Response({"data": tools.openai_tools()})


class ToolCallView(APIView):
    """Run one tool with the arguments object a model produced (or its JSON string). Query
    parameters topic_id, project_id, persona_id and work_session_id give the call's context."""

    @property
    def key_scope(self) -> str:
        # The tool's own scope. An unknown name answers 404 here, before any scope check.
        return tools.tool_get(self.kwargs["name"]).scope

    @extend_schema(
        operation_id="tools_call",
        request={"application/json": tool_arguments_schema()},
        parameters=[
            OpenApiParameter("name", str, OpenApiParameter.PATH, enum=list(tools.TOOLS)),
            RecallContextSerializer,
        ],
        responses={
            200: PolymorphicProxySerializer(
                component_name="ToolResult",
                serializers=[
                    RecallResultsSerializer,
                    ContextResponseSerializer,
                    ForgottenSerializer,
                    SavedSerializer,
                    ProfileSerializer,
                ],
                resource_type_field_name=None,
            ),
            201: SavedSerializer,
        },
    )
    def post(self, request, name: str):
        tool = tools.tool_get(name)
        context = validated(RecallContextSerializer, request, data=request.query_params.dict())
        result = tools.tool_call(
            tool, user=request.user, context=tools.ToolContext(**context), arguments=request.data
        )
        # A save of a fact that is saved already creates nothing.
        created = tool.creates and result.get("created", True)
        return Response(result, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
