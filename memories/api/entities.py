"""The caller's entities: GET /api/entities (?kind=, ?relation=), GET/PATCH
/api/entities/{id}, POST /api/entities/{id}/merge. Another user's entity is a 404, as a
memory is."""

from django.db.models import Count, Q
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from memories.entities.linking import entities_merge, entity_rename
from memories.errors import InvalidInput, NotFound
from memories.models import Entity, EntityKind, Status
from memories.representations import EntityDetailSerializer, EntitySerializer
from rest.fields import StrictInputMixin, StrictUUIDField, trimmed_char
from rest.inputs import caller, parse_uuid, validated


class EntityUpdateSerializer(StrictInputMixin, serializers.Serializer):
    name = trimmed_char(200, required=False)
    aliases = serializers.ListField(child=trimmed_char(200), required=False, max_length=50)
    relation = trimmed_char(100, allow_blank=True, required=False)
    kind = serializers.ChoiceField(choices=EntityKind.choices, required=False)


class EntityMergeSerializer(StrictInputMixin, serializers.Serializer):
    entity_ids = serializers.ListField(child=StrictUUIDField(), min_length=1, max_length=50)


class EntityViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    serializer_class = EntitySerializer
    list_query_params = ("kind", "relation")

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Entity.objects.none()
        current = Q(memories__status=Status.ACTIVE, memories__deleted_at__isnull=True)
        entities = Entity.objects.filter(user=caller(self.request)).annotate(
            current_memories=Count("memories", filter=current)
        )
        params = self.request.query_params
        if "kind" in params:
            if params["kind"] not in EntityKind.values:
                raise InvalidInput(f"kind is one of {', '.join(EntityKind.values)}.", field="kind")
            entities = entities.filter(kind=params["kind"])
        if "relation" in params:
            relation = params["relation"].strip()
            if len(relation) > 100 or not relation.isprintable():
                raise InvalidInput(
                    "relation is at most 100 printable characters.", field="relation"
                )
            entities = entities.filter(relation__iexact=relation)
        return entities.order_by("relation", "name", "id")

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, enum=EntityKind.values),
            OpenApiParameter("relation", str, description="wife, dog, employer, ..."),
        ]
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    def _own(self, pk) -> Entity:
        entity = Entity.objects.filter(
            id=parse_uuid(pk, what="entity"), user=caller(self.request)
        ).first()
        if entity is None:
            raise NotFound("None of your entities has this id.", field="id")
        return entity

    @extend_schema(responses=EntityDetailSerializer)
    def retrieve(self, request, pk=None):
        return Response(EntityDetailSerializer(self._own(pk), context={"request": request}).data)

    @extend_schema(request=EntityUpdateSerializer, responses=EntityDetailSerializer)
    def partial_update(self, request, pk=None):
        entity = self._own(pk)
        changes = validated(EntityUpdateSerializer, request)
        entity = entity_rename(entity, changes=changes)
        return Response(EntityDetailSerializer(entity, context={"request": request}).data)

    @extend_schema(request=EntityMergeSerializer, responses=EntityDetailSerializer)
    @action(detail=True, methods=["post"])
    def merge(self, request, pk=None):
        keep = self._own(pk)
        ids = validated(EntityMergeSerializer, request)["entity_ids"]
        others = list(Entity.objects.filter(id__in=ids, user=keep.user_id))
        if len(others) != len(set(ids)):
            raise NotFound("None of your entities has one of these ids.", field="entity_ids")
        entity = entities_merge(keep=keep, others=others)
        return Response(EntityDetailSerializer(entity, context={"request": request}).data)
