"""Webhook endpoints over the API (staff, or a key with the review scope), each caller its own
tenant's: GET/POST /api/webhooks, GET/PATCH/DELETE /api/webhooks/{id},
POST /api/webhooks/{id}/rotate-secret, GET /api/webhooks/{id}/deliveries and
POST /api/webhooks/{id}/deliveries/{delivery_id}/replay."""

import json

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response

from memories.models import ApiKeyScope
from rest.fields import StrictInputMixin
from rest.inputs import caller, parse_uuid, validated
from rest.permissions import KeyHasScope
from webhooks import endpoints
from webhooks.models import EventType, WebhookAttempt, WebhookDelivery, WebhookEndpoint

EVENTS_HELP = "Event names: " + ", ".join(EventType.values) + "."


class WebhookEndpointSerializer(serializers.ModelSerializer):
    events = serializers.ListField(child=serializers.CharField(), help_text=EVENTS_HELP)

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "description", "events", "is_active", "created_at", "updated_at"]
        read_only_fields = fields


class WebhookEndpointWithSecretSerializer(WebhookEndpointSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text="The signing secret (Standard Webhooks: whsec_ + base64). Shown in this "
        "answer only: keep it now.",
    )

    class Meta(WebhookEndpointSerializer.Meta):
        fields = [*WebhookEndpointSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class WebhookEndpointInputSerializer(StrictInputMixin, serializers.Serializer):
    url = serializers.CharField(max_length=2000, help_text="http:// or https:// URL.")
    events = serializers.ListField(
        child=serializers.CharField(max_length=40), max_length=20, help_text=EVENTS_HELP
    )
    description = serializers.CharField(
        max_length=200, allow_blank=True, required=False, default=""
    )
    is_active = serializers.BooleanField(required=False, default=True)


class WebhookAttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = WebhookAttempt
        fields = ["number", "started_at", "duration_ms", "outcome", "status_code", "error"]
        read_only_fields = fields


class WebhookDeliverySerializer(serializers.ModelSerializer):
    webhook_id = serializers.CharField(source="message_id", read_only=True)
    payload = serializers.SerializerMethodField(help_text="The event body as sent.")
    attempts = WebhookAttemptSerializer(many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = [
            "id",
            "event_type",
            "webhook_id",
            "status",
            "attempt_count",
            "next_attempt_at",
            "created_at",
            "payload",
            "attempts",
        ]
        read_only_fields = fields

    def get_payload(self, delivery: WebhookDelivery) -> dict:
        return json.loads(delivery.body)


DELIVERY_ID = OpenApiParameter("delivery_id", str, OpenApiParameter.PATH)


class WebhookEndpointViewSet(viewsets.GenericViewSet):
    """Webhook endpoints of the caller's tenant, and their delivery log."""

    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    serializer_class = WebhookEndpointSerializer
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return WebhookEndpoint.objects.none()
        return endpoints.endpoints_for(actor=caller(self.request))

    def _endpoint(self) -> WebhookEndpoint:
        return endpoints.endpoint_get(
            endpoint_id=parse_uuid(self.kwargs["pk"], what="webhook endpoint"),
            actor=caller(self.request),
        )

    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(WebhookEndpointSerializer(page, many=True).data)

    @extend_schema(
        request=WebhookEndpointInputSerializer,
        responses={201: WebhookEndpointWithSecretSerializer},
    )
    def create(self, request):
        data = validated(WebhookEndpointInputSerializer, request)
        endpoint = endpoints.endpoint_create(actor=caller(request), **data)
        return Response(
            WebhookEndpointWithSecretSerializer(endpoint).data, status=status.HTTP_201_CREATED
        )

    def retrieve(self, request, pk=None):
        return Response(WebhookEndpointSerializer(self._endpoint()).data)

    @extend_schema(request=WebhookEndpointInputSerializer(partial=True))
    def partial_update(self, request, pk=None):
        endpoint = self._endpoint()
        changes = validated(WebhookEndpointInputSerializer, request, partial=True)
        endpoint = endpoints.endpoint_update(endpoint=endpoint, changes=dict(changes))
        return Response(WebhookEndpointSerializer(endpoint).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        endpoints.endpoint_delete(endpoint=self._endpoint())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses=WebhookEndpointWithSecretSerializer)
    @action(detail=True, methods=["post"], url_path="rotate-secret")
    def rotate_secret(self, request, pk=None):
        endpoint = endpoints.endpoint_rotate_secret(endpoint=self._endpoint())
        return Response(WebhookEndpointWithSecretSerializer(endpoint).data)

    @extend_schema(responses=WebhookDeliverySerializer(many=True))
    @action(detail=True, methods=["get"])
    def deliveries(self, request, pk=None):
        page = self.paginate_queryset(endpoints.deliveries_for(endpoint=self._endpoint()))
        return self.get_paginated_response(WebhookDeliverySerializer(page, many=True).data)

    @extend_schema(
        request=None, responses={202: WebhookDeliverySerializer}, parameters=[DELIVERY_ID]
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="deliveries/(?P<delivery_id>[^/]+)/replay",
        url_name="delivery-replay",
    )
    def replay(self, request, pk=None, delivery_id=None):
        endpoint = self._endpoint()
        delivery = endpoints.delivery_get(
            endpoint=endpoint,
            delivery_id=parse_uuid(delivery_id, field="delivery_id", what="delivery"),
        )
        endpoints.deliveries_replay(delivery_ids=[delivery.id])
        # The delivery as it stands now: with a worker the attempt is still to come; inline
        # (no broker, no embedded worker) it has been made already.
        return Response(
            WebhookDeliverySerializer(
                endpoints.delivery_get(endpoint=endpoint, delivery_id=delivery.id)
            ).data,
            status=status.HTTP_202_ACCEPTED,
        )
