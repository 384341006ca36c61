"""The scope carriers over REST: projects, topics and work sessions with their messages,
personas."""

from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response

from memories import selectors, services
from memories.api.carrier_serializers import (
    MessageBatchSerializer,
    MessageSerializer,
    PersonaSerializer,
    ProjectSerializer,
    TopicSerializer,
    WorkSessionMessageBatchSerializer,
    WorkSessionMessageSerializer,
    WorkSessionSerializer,
    extraction_report_field,
    message_posted_serializer,
)
from memories.errors import NotFound
from memories.models import (
    ApiKeyScope,
    MessageRole,
    Persona,
    Project,
    Topic,
    WorkSession,
)
from rest.inputs import parse_uuid, validated


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
    {"messages": [...]} to append many at once; either answer says what happened to
    extraction (see extraction_report)."""

    message_serializer = MessageSerializer
    message_batch_serializer = MessageBatchSerializer

    def _messages(self, request, parent, append_messages):
        if request.method == "POST":
            if isinstance(request.data, dict) and "messages" in request.data:
                items = validated(self.message_batch_serializer, request)["messages"]
                posted = append_messages(parent, items)
                data = self.message_serializer(posted.messages, many=True).data
                body = {"data": data, "extraction": extraction_report(posted)}
                return Response(body, status=status.HTTP_201_CREATED)
            data = validated(self.message_serializer, request)
            posted = append_messages(parent, [data])
            [message] = posted.messages
            body = {
                **self.message_serializer(message).data,
                "extraction": extraction_report(posted),
            }
            return Response(body, status=status.HTTP_201_CREATED)
        page = self.paginate_queryset(parent.messages.order_by("id"))
        return self.get_paginated_response(self.message_serializer(page, many=True).data)


def extraction_report(posted) -> dict:
    """What a post answers as `extraction`: what the MESSAGE_POSTED_HOOKS hook reported (the
    run it started, or not_triggered with its reason), else not_triggered saying why no hook
    was asked or none answered."""
    if posted.extraction is not None:
        return posted.extraction
    if not any(message.role == MessageRole.USER for message in posted.messages):
        reason = "Only user messages trigger extraction, and this post had none."
    else:
        reason = "No extraction hook answered (MESSAGE_POSTED_HOOKS is empty, or it failed)."
    return {"status": "not_triggered", "reason": reason}


def messages_post_schema(message_serializer, batch_serializer) -> dict:
    """POST {id}/messages: one message in and out (with `extraction`), or {"messages": [...]}
    in and {"data", "extraction"} out."""
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
                    message_posted_serializer(message_serializer),
                    inline_serializer(
                        f"{name}BatchPosted",
                        {
                            "data": message_serializer(many=True),
                            "extraction": extraction_report_field(),
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
    """Every user may read their tenant's personas; its staff (review keys) create and change
    them. Another tenant's persona is not found."""

    serializer_class = PersonaSerializer
    lookup_value_regex = "[^/]+"
    key_acts_as_itself = True

    @property
    def key_scope(self) -> str:
        return ApiKeyScope.READ if self.request.method in SAFE_METHODS else ApiKeyScope.REVIEW

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return Persona.objects.none()
        return selectors.personas_of(self.request.user).select_related("tenant").order_by("name")

    def get_object(self):
        persona_id = parse_uuid(self.kwargs["pk"], what="persona")
        return selectors.persona_get(user=self.request.user, persona_id=persona_id, field="id")

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
