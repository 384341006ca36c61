"""POST /api/memories/extract/{topic_id} and /api/memories/extract-work/{session_id}, which
queue an extraction, and GET /api/extraction-runs[/{task_id}], which follow it."""

from typing import Any

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from extraction import runs, selectors
from extraction.models import ExtractionRun, RunStatus, SourceKind
from extraction.representations import ExtractionRunSerializer, run_error, run_skip_reason
from memories import selectors as memory_selectors
from memories.models import ApiKeyScope
from rest.inputs import parse_uuid


class ExtractionAcceptedSerializer(serializers.Serializer):
    task_id = serializers.CharField(help_text="Follow it at GET /api/extraction-runs/{task_id}.")
    status = serializers.ChoiceField(choices=RunStatus.choices)
    error = serializers.CharField(
        required=False, allow_null=True, help_text="Once finished: why a failed run failed."
    )
    reason = serializers.CharField(
        required=False, allow_null=True, help_text="Once finished: why a skipped run skipped."
    )
    result = serializers.DictField(child=serializers.IntegerField(), required=False)


def accepted(run: ExtractionRun) -> Response:
    """202 with the run's task id and status. Where tasks run in process the run has finished
    by now, so its outcome (done, skipped or failed, the reason and the counts) is in the
    answer: a failure's message in `error`, a skip's in `reason`, as the run object has them.
    A source whose extraction was already on its way answers that run."""
    body: dict[str, Any] = {"task_id": run.task_id, "status": run.status}
    if run.status in runs.FINISHED:
        body.update(error=run_error(run), reason=run_skip_reason(run), result=run.result())
    return Response(body, status=status.HTTP_202_ACCEPTED)


class ExtractTopicView(APIView):
    """Extract whatever user and assistant messages are new since the last extraction."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "extraction"  # EXTRACTION_THROTTLE_RATE per user: it calls a paid model

    @extend_schema(request=None, responses={202: ExtractionAcceptedSerializer})
    def post(self, request, topic_id: str):
        topic = memory_selectors.topic_get(
            user=request.user, topic_id=parse_uuid(topic_id, field="topic_id", what="topic")
        )
        run, _ = runs.run_queue(
            kind=SourceKind.TOPIC, source_id=topic.id, user=topic.user, automatic=False
        )
        return accepted(run)


class ExtractWorkSessionView(APIView):
    """Extract from a work session: only in a managed project, every 10 user messages."""

    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "extraction"  # EXTRACTION_THROTTLE_RATE per user: it calls a paid model

    @extend_schema(request=None, responses={202: ExtractionAcceptedSerializer})
    def post(self, request, session_id: str):
        session = memory_selectors.work_session_get(
            user=request.user,
            session_id=parse_uuid(session_id, field="session_id", what="work session"),
            field="session_id",
        )
        run, _ = runs.run_queue(
            kind=SourceKind.WORK_SESSION, source_id=session.id, user=session.user, automatic=True
        )
        return accepted(run)


class ExtractionRunFilter(django_filters.FilterSet):
    """Query parameters of GET /api/extraction-runs."""

    status = django_filters.ChoiceFilter(choices=RunStatus.choices)
    source_kind = django_filters.ChoiceFilter(choices=SourceKind.choices)
    source_id = django_filters.UUIDFilter()

    class Meta:
        model = ExtractionRun
        fields: list[str] = []


class ExtractionRunViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The caller's extraction runs, newest first (staff: everyone's), and one by task id."""

    serializer_class = ExtractionRunSerializer
    filterset_class = ExtractionRunFilter
    key_scope = ApiKeyScope.READ
    lookup_field = "task_id"
    lookup_value_regex = "[^/]+"

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the OpenAPI schema has no caller
            return ExtractionRun.objects.none()
        return selectors.runs_visible_to(self.request.user)

    def retrieve(self, request, task_id: str):
        run = selectors.run_get(user=request.user, task_id=task_id)
        return Response(ExtractionRunSerializer(run).data)
