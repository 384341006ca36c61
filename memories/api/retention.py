"""Retention rules over the API (staff, or a key with the review scope), each caller its own
tenant's: GET/POST /api/retention-rules, GET/PATCH/DELETE /api/retention-rules/{id}."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response

from memories.models import ApiKeyScope, RetentionRule, Scope
from memories.retention import rules
from rest.fields import StrictInputMixin, StrictUUIDField, trimmed_char
from rest.inputs import caller, parse_uuid, validated
from rest.permissions import KeyHasScope


class RetentionRuleSerializer(serializers.ModelSerializer):
    project_id = serializers.UUIDField(
        read_only=True, allow_null=True, help_text="Only this project's memories; null: all."
    )
    scope = serializers.ChoiceField(
        choices=Scope.choices, allow_blank=True, read_only=True, help_text="'': any scope."
    )

    class Meta:
        model = RetentionRule
        fields = ["id", "project_id", "scope", "category", "days", "created_at", "updated_at"]
        read_only_fields = fields


class RetentionRuleInputSerializer(StrictInputMixin, serializers.Serializer):
    project_id = StrictUUIDField(
        required=False,
        allow_null=True,
        help_text="Only the memories of this project (of a user of your tenant): its project "
        "memories and the session memories of its conversations. Null: the whole tenant's.",
    )
    scope = serializers.ChoiceField(
        choices=["", *Scope.values],
        required=False,
        default="",
        help_text="Only memories of this scope; '' (the default): any scope.",
    )
    category = trimmed_char(
        settings.MEMORY_CATEGORY_MAX_LENGTH,
        allow_blank=True,
        required=False,
        default="",
        help_text="Only memories of exactly this category; '' (the default): any category.",
    )
    days = serializers.IntegerField(
        min_value=1,
        max_value=rules.MAX_DAYS,
        help_text="How long a memory it matches stays current, from its valid_from: "
        f"1 to {rules.MAX_DAYS} days.",
    )


class RetentionRuleViewSet(viewsets.GenericViewSet):
    """The retention rules of the caller's tenant (docs/operations.md, Retention)."""

    # The key's scope is checked before staff, so a key without review hears which it lacks.
    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    serializer_class = RetentionRuleSerializer
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return RetentionRule.objects.none()
        return rules.retention_rules_of(actor=caller(self.request))

    def _rule(self) -> RetentionRule:
        return rules.retention_rule_get(
            actor=caller(self.request),
            rule_id=parse_uuid(self.kwargs["pk"], what="retention rule"),
        )

    def list(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(RetentionRuleSerializer(page, many=True).data)

    @extend_schema(request=RetentionRuleInputSerializer, responses={201: RetentionRuleSerializer})
    def create(self, request):
        data = validated(RetentionRuleInputSerializer, request)
        rule = rules.retention_rule_save(
            rule=RetentionRule(tenant=rules.tenant_of(caller(request)), **data)
        )
        return Response(RetentionRuleSerializer(rule).data, status=status.HTTP_201_CREATED)

    def retrieve(self, request, pk=None):
        return Response(RetentionRuleSerializer(self._rule()).data)

    @extend_schema(request=RetentionRuleInputSerializer(partial=True))
    def partial_update(self, request, pk=None):
        rule = self._rule()
        changes = validated(RetentionRuleInputSerializer, request, partial=True)
        for name, value in changes.items():
            setattr(rule, name, value)
        return Response(RetentionRuleSerializer(rules.retention_rule_save(rule=rule)).data)

    @extend_schema(responses={204: None})
    def destroy(self, request, pk=None):
        rules.retention_rule_delete(rule=self._rule())
        return Response(status=status.HTTP_204_NO_CONTENT)
