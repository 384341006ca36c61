"""The REST contract, as the README lists it. Each view validates, calls one service or
selector, and serialises; errors are raised and shaped by memories.api.errors."""

from uuid import UUID

from django.conf import settings
from django.contrib.auth import authenticate
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken.models import Token
from rest_framework.decorators import action
from rest_framework.exceptions import NotAuthenticated
from rest_framework.permissions import SAFE_METHODS, AllowAny, IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memories import saving, selectors, services, tools
from memories.api.carrier_serializers import (
    ExtractionStartedSerializer,
    MessageBatchSerializer,
    MessageSerializer,
    PersonaSerializer,
    ProjectSerializer,
    TopicSerializer,
    WorkSessionMessageBatchSerializer,
    WorkSessionMessageSerializer,
    WorkSessionSerializer,
)
from memories.api.filters import MemoryFilter
from memories.api.permissions import KeyHasScope
from memories.api.schema import tool_arguments_schema
from memories.api.serializers import (
    ApprovedCountSerializer,
    BulkIdsSerializer,
    ContextRequestSerializer,
    ContextResponseSerializer,
    CountSerializer,
    ForgottenSerializer,
    MemoryBatchCreateSerializer,
    MemoryCreateSerializer,
    MemorySerializer,
    MemoryUpdateSerializer,
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
from memories.errors import InvalidInput, NotFound
from memories.models import (
    ApiKeyScope,
    Memory,
    Persona,
    Project,
    RevisionAction,
    Topic,
    User,
    WorkSession,
)
from memories.recall.hint import memory_hint
from memories.recall.query import query_for_recall
from memories.recall.recall import memory_recall
from memories.recall.scopes import recall_scopes
from ops import timing


def parse_uuid(raw: str, *, field: str = "id", what: str = "object") -> UUID:
    """Path ids are UUIDs; anything else names no object (404 naming the field)."""
    try:
        return UUID(str(raw))
    except ValueError:
        raise NotFound(f"No {what} with id {raw!r}: ids are UUIDs.", field=field) from None


def caller(request: Request) -> User:
    """The authenticated user making the request. Views reach it only past IsAuthenticated
    (or a key's user), so it is never AnonymousUser; should one slip through, 401."""
    user = request.user
    if not isinstance(user, User):
        raise NotAuthenticated()
    return user


def validated(serializer_class, request, *, data=None, context=None, **kwargs) -> dict:
    serializer = serializer_class(
        data=request.data if data is None else data,
        context={"request": request, **(context or {})},
        **kwargs,
    )
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


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
            services.memory_update(memory=memory, actor=request.user, changes=changes)
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

    @extend_schema(parameters=[SearchParamsSerializer], responses=RecallResultsSerializer)
    @action(detail=False, methods=["get"], filterset_class=None, pagination_class=None)
    def search(self, request):
        params = validated(SearchParamsSerializer, request, data=request.query_params.dict())
        hits = memory_recall(
            query=query_for_recall(params["q"]),
            scopes=scopes_for(request, params),
            top_k=params["top_k"],
            as_of=params.get("as_of"),
        )
        with timing.stage("serialize"):
            data = RecallResultSerializer(hits, many=True, context={"request": request}).data
        return Response({"data": data})

    @extend_schema(request=ContextRequestSerializer, responses=ContextResponseSerializer)
    @action(detail=False, methods=["post"], filterset_class=None, pagination_class=None)
    def context(self, request):
        data = validated(ContextRequestSerializer, request)
        hint, used = memory_hint(
            query=data["query"],
            scopes=scopes_for(request, data),
            top_k=data["top_k"],
            budget=settings.MEMORY_HINT_BUDGET_CHARS,
            as_of=data.get("as_of"),
        )
        memories = RecallResultSerializer(used, many=True, context={"request": request}).data
        return Response({"hint": hint, "memories": memories})

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

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return Memory.objects.none()
        return selectors.pending_memories(actor=self.request.user)

    @extend_schema(responses=MemorySerializer(many=True))
    @action(detail=False, methods=["get"])
    def pending(self, request):
        page = self.paginate_queryset(self.get_queryset().select_related("user"))
        return self.get_paginated_response(
            MemorySerializer(page, many=True, context={"request": request}).data
        )

    def _bulk_review(self, decision: str) -> int:
        ids = validated(BulkIdsSerializer, self.request)["ids"]
        # Only memories of users this reviewer administers (another tenant's are skipped, as
        # ids that are not pending are).
        administered = set(
            Memory.objects.filter(
                selectors.administered_by(caller(self.request), via="user__"), id__in=ids
            ).values_list("id", flat=True)
        )
        ids = [memory_id for memory_id in ids if memory_id in administered]
        changed = services.memory_review(
            memory_ids=ids, actor=caller(self.request), decision=decision
        )
        return len(changed)

    @extend_schema(request=BulkIdsSerializer, responses=ApprovedCountSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-approve")
    def bulk_approve(self, request):
        return Response({"approved": self._bulk_review(RevisionAction.APPROVE)})

    @extend_schema(request=BulkIdsSerializer, responses=RejectedCountSerializer)
    @action(detail=False, methods=["post"], url_path="bulk-reject")
    def bulk_reject(self, request):
        return Response({"rejected": self._bulk_review(RevisionAction.REJECT)})


class OwnedViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """List and fetch the caller's own rows of `model` (owner field `owner_field`)."""

    model: type[Project] | type[Topic] | type[WorkSession] | None = None
    owner_field = "user"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return self.model.objects.none()
        return self.model.objects.filter(**{self.owner_field: self.request.user}).order_by(
            "-created_at"
        )

    def get_object(self):
        object_id = parse_uuid(self.kwargs["pk"], what=self.model._meta.verbose_name)
        found = self.get_queryset().filter(id=object_id).first()
        if found is None:
            raise NotFound(f"No {self.model._meta.verbose_name} with this id.", field="id")
        return found

    def retrieve(self, request, pk=None):
        return Response(self.get_serializer(self.get_object()).data)


class ProjectViewSet(OwnedViewSet):
    model = Project
    owner_field = "owner"
    serializer_class = ProjectSerializer

    def create(self, request):
        data = validated(ProjectSerializer, request)
        project = services.project_create(owner=request.user, **data)
        return Response(ProjectSerializer(project).data, status=status.HTTP_201_CREATED)


class MessagesMixin:
    """GET/POST {id}/messages for topics and work sessions. POST takes one message, or
    {"messages": [...]} to append many at once (answered with the extraction they started)."""

    message_serializer = MessageSerializer
    message_batch_serializer = MessageBatchSerializer

    def _messages(self, request, parent, append_messages):
        if request.method == "POST":
            if isinstance(request.data, dict) and "messages" in request.data:
                items = validated(self.message_batch_serializer, request)["messages"]
                posted = append_messages(parent, items)
                data = self.message_serializer(posted.messages, many=True).data
                return Response(
                    {"data": data, "extraction": posted.extraction}, status=status.HTTP_201_CREATED
                )
            data = validated(self.message_serializer, request)
            [message] = append_messages(parent, [data]).messages
            return Response(self.message_serializer(message).data, status=status.HTTP_201_CREATED)
        page = self.paginate_queryset(parent.messages.order_by("id"))
        return self.get_paginated_response(self.message_serializer(page, many=True).data)


def messages_post_schema(message_serializer, batch_serializer) -> dict:
    """POST {id}/messages: one message in and out, or {"messages": [...]} in and
    {"data", "extraction"} out."""
    name = message_serializer.__name__.removesuffix("Serializer")
    return {
        "methods": ["POST"],
        "request": PolymorphicProxySerializer(
            component_name=f"{name}Post",
            serializers=[message_serializer, batch_serializer],
            resource_type_field_name=None,
        ),
        "responses": {
            201: PolymorphicProxySerializer(
                component_name=f"{name}Posted",
                serializers=[
                    message_serializer,
                    inline_serializer(
                        f"{name}BatchPosted",
                        {
                            "data": message_serializer(many=True),
                            "extraction": ExtractionStartedSerializer(allow_null=True),
                        },
                    ),
                ],
                resource_type_field_name=None,
            )
        },
    }


class TopicViewSet(MessagesMixin, OwnedViewSet):
    model = Topic
    serializer_class = TopicSerializer

    def create(self, request):
        data = validated(TopicSerializer, request)
        topic = services.topic_create(user=request.user, **data)
        return Response(TopicSerializer(topic).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["GET"], responses=MessageSerializer(many=True))
    @extend_schema(**messages_post_schema(MessageSerializer, MessageBatchSerializer))
    @action(detail=True, methods=["get", "post"], serializer_class=MessageSerializer)
    def messages(self, request, pk=None):
        return self._messages(
            request,
            self.get_object(),
            lambda topic, items: services.message_create_batch(topic=topic, items=items),
        )


class WorkSessionViewSet(MessagesMixin, OwnedViewSet):
    model = WorkSession
    serializer_class = WorkSessionSerializer
    message_serializer = WorkSessionMessageSerializer
    message_batch_serializer = WorkSessionMessageBatchSerializer

    def create(self, request):
        data = validated(WorkSessionSerializer, request)
        session = services.work_session_create(user=request.user, **data)
        return Response(WorkSessionSerializer(session).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["GET"], responses=WorkSessionMessageSerializer(many=True))
    @extend_schema(
        **messages_post_schema(WorkSessionMessageSerializer, WorkSessionMessageBatchSerializer)
    )
    @action(detail=True, methods=["get", "post"], serializer_class=WorkSessionMessageSerializer)
    def messages(self, request, pk=None):
        return self._messages(
            request,
            self.get_object(),
            lambda session, items: services.work_session_message_create_batch(
                session=session, items=items
            ),
        )


class PersonaViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Every user may read personas; staff create and change them."""

    serializer_class = PersonaSerializer
    queryset = Persona.objects.order_by("name")
    lookup_value_regex = "[^/]+"
    key_acts_as_itself = True

    @property
    def key_scope(self) -> str:
        return ApiKeyScope.READ if self.request.method in SAFE_METHODS else ApiKeyScope.REVIEW

    def get_object(self):
        persona_id = parse_uuid(self.kwargs["pk"], what="persona")
        return selectors.persona_get(persona_id=persona_id, field="id")

    def retrieve(self, request, pk=None):
        return Response(PersonaSerializer(self.get_object()).data)

    def create(self, request):
        data = validated(PersonaSerializer, request)
        persona = services.persona_create(actor=request.user, **data)
        return Response(PersonaSerializer(persona).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=PersonaSerializer, responses=PersonaSerializer)
    def partial_update(self, request, pk=None):
        persona = self.get_object()
        data = validated(PersonaSerializer, request, partial=True)
        persona = services.persona_update(actor=request.user, persona=persona, changes=data)
        return Response(PersonaSerializer(persona).data)


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
