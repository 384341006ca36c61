"""Consolidation proposals for reviewers (staff, or a key with the review scope):
GET /api/admin/consolidation-proposals[/{id}], POST .../{id}/approve and .../{id}/reject."""

import django_filters
from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.response import Response

from memories import consolidation
from memories.models import (
    ApiKeyScope,
    ConsolidationProposal,
    ProposalKind,
    ProposalStatus,
    RevisionAction,
)
from memories.representations import ConsolidationProposalSerializer
from rest.fields import StrictInputMixin, trimmed_char
from rest.inputs import parse_uuid, validated
from rest.permissions import KeyHasScope


class ProposalApproveSerializer(StrictInputMixin, serializers.Serializer):
    """Optional: the reviewer's own text for the merged memory."""

    key = trimmed_char(settings.MEMORY_KEY_MAX_LENGTH, required=False)
    value = trimmed_char(settings.MEMORY_VALUE_MAX_LENGTH, required=False)


class ProposalFilter(django_filters.FilterSet):
    """Query parameters of the list. `status` defaults to pending."""

    status = django_filters.ChoiceFilter(choices=ProposalStatus.choices, method="filter_status")
    kind = django_filters.ChoiceFilter(choices=ProposalKind.choices)
    user_id = django_filters.UUIDFilter(field_name="user_id")

    class Meta:
        model = ConsolidationProposal
        fields: list[str] = []

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.filter(status=ProposalStatus.PENDING)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        return queryset.filter(status=value)


class ConsolidationProposalViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Merges and archivals that consolidation proposes, for review: nothing changes until one
    is approved."""

    # The key's scope is checked before staff, so a key without review hears which it lacks.
    permission_classes = [IsAuthenticated, KeyHasScope, IsAdminUser]
    serializer_class = ConsolidationProposalSerializer
    filterset_class = ProposalFilter
    key_scope = ApiKeyScope.REVIEW
    key_acts_as_itself = True
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return ConsolidationProposal.objects.none()
        return consolidation.proposals_for_review(actor=self.request.user)

    def _proposal_id(self):
        return parse_uuid(self.kwargs["pk"], what="consolidation proposal")

    def _respond(self, proposal):
        return Response(
            ConsolidationProposalSerializer(proposal, context={"request": self.request}).data
        )

    def retrieve(self, request, pk=None):
        return self._respond(
            consolidation.proposal_get(proposal_id=self._proposal_id(), actor=request.user)
        )

    @extend_schema(request=ProposalApproveSerializer, responses=ConsolidationProposalSerializer)
    @action(detail=True, methods=["post"], filterset_class=None)
    def approve(self, request, pk=None):
        data = validated(ProposalApproveSerializer, request)
        proposal = consolidation.proposal_decide(
            proposal_id=self._proposal_id(),
            actor=request.user,
            decision=RevisionAction.APPROVE,
            **data,
        )
        return self._respond(proposal)

    @extend_schema(request=None, responses=ConsolidationProposalSerializer)
    @action(detail=True, methods=["post"], filterset_class=None)
    def reject(self, request, pk=None):
        proposal = consolidation.proposal_decide(
            proposal_id=self._proposal_id(), actor=request.user, decision=RevisionAction.REJECT
        )
        return self._respond(proposal)
