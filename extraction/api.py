"""POST /api/memories/extract/{topic_id} and /api/memories/extract-work/{session_id}."""

from celery.result import EagerResult
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from extraction.tasks import extract_topic_task, extract_work_session_task
from memories import selectors
from memories.api.views import parse_uuid


class ExtractionAcceptedSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    status = serializers.ChoiceField(choices=["queued", "done", "skipped", "failed"])
    reason = serializers.CharField(required=False)
    result = serializers.DictField(child=serializers.IntegerField(), required=False)


def accepted(async_result) -> Response:
    """202 with the task id; where tasks run in-process the task is finished already, so
    its outcome (done, skipped or failed, and the counts) is in the answer."""
    body = {"task_id": async_result.id, "status": "queued"}
    if isinstance(async_result, EagerResult):
        summary = async_result.get()
        body.update(status=summary["status"], reason=summary["reason"], result=summary["result"])
    return Response(body, status=status.HTTP_202_ACCEPTED)


class ExtractTopicView(APIView):
    """Extract whatever user and assistant messages are new since the last extraction."""

    @extend_schema(request=None, responses={202: ExtractionAcceptedSerializer})
    def post(self, request, topic_id: str):
        topic = selectors.topic_get(
            user=request.user, topic_id=parse_uuid(topic_id, field="topic_id", what="topic")
        )
        return accepted(extract_topic_task.delay(str(topic.id), False))


class ExtractWorkSessionView(APIView):
    """Extract from a work session: only in a managed project, every 10 user messages."""

    @extend_schema(request=None, responses={202: ExtractionAcceptedSerializer})
    def post(self, request, session_id: str):
        session = selectors.work_session_get(
            user=request.user,
            session_id=parse_uuid(session_id, field="session_id", what="work session"),
            field="session_id",
        )
        return accepted(extract_work_session_task.delay(str(session.id)))
