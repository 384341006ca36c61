"""Signal receivers (connected in OpsConfig.ready, in web and worker processes alike): a
request's log fields end with it; the request id goes with the tasks a request queues and
comes back in the worker's log lines; every task's outcome is counted for /metrics."""

from contextvars import Token

from celery import signals
from django.core.signals import request_finished
from django.dispatch import receiver

from ops import context, metrics

HEADER = "request_id"

# Between a task's prerun and postrun: the token that undoes its log fields, by task id.
_bound: dict[str, Token] = {}


@receiver(request_finished)
def end_request_log_fields(**kwargs) -> None:
    context.end_request()


@signals.before_task_publish.connect
def add_request_id_header(headers=None, **kwargs) -> None:
    request_id = context.current_request_id()
    if request_id and headers is not None:
        headers.setdefault(HEADER, request_id)


@signals.task_prerun.connect
def bind_task_log_fields(task_id=None, task=None, **kwargs) -> None:
    request = task.request
    # A worker finds the message header among the request's attributes; a task applied with
    # headers=... in its `headers`. In process the request's own id is still bound.
    request_id = getattr(request, HEADER, None) or (request.headers or {}).get(HEADER)
    fields = {"task_id": task_id, "task": task.name}
    if request_id:
        fields["request_id"] = request_id
    _bound[task_id] = context.bind(**fields)


@signals.task_postrun.connect
def unbind_task_log_fields(task_id=None, task=None, state=None, **kwargs) -> None:
    token = _bound.pop(task_id, None)
    if token is not None:
        context.unbind(token)
    # Counted here, not on task_success/task_failure: a task run in process (no broker)
    # re-raises its error (CELERY_TASK_EAGER_PROPAGATES) before task_failure is sent. It
    # ends with no state then; a worker's task ends SUCCESS, FAILURE, RETRY...
    metrics.count_task(task=task.name, outcome=(state or "FAILURE").lower())
