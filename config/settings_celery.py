"""Celery settings, part of config.settings: a broker or none (tasks then run in-process),
and how a task's message survives its worker."""

from config.settings_env import BASE_DIR, env

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
# No broker: run tasks in the calling process so the embedded set-up needs nothing else.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# acks_late: a task's message stays in Redis, unacknowledged, until the task has ended. When a
# worker dies mid-task (SIGKILL, out of memory, a lost machine) Redis hands the message to
# another worker once it has been out this long. That delivery takes the dead attempt's run
# over only after EXTRACTION_CLAIM_SECONDS (extraction/runs.py), so this must be longer
# (config/settings_extraction.py checks); and longer than any task runs with its retries, or a
# live task is delivered twice (harmless: the run is taken once, but its model call is paid
# twice).
_visibility_timeout = env.int("CELERY_VISIBILITY_TIMEOUT_SECONDS", default=3600, minimum=1)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": _visibility_timeout,
    # Workers look for such messages every tenth of the timeout (1-10 s, one cheap Redis
    # query); kombu's own default looks every 100 s.
    "unacked_restore_interval": max(1, min(10, _visibility_timeout // 10)),
    "unacked_restore_throttle": 1,
}
# Beat's record of when each schedule last ran, wherever `celery beat` is started from.
CELERY_BEAT_SCHEDULE_FILENAME = str(BASE_DIR / "var" / "celerybeat-schedule")
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default="") or None
CELERY_TASK_IGNORE_RESULT = True
