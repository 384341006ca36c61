"""Retention (docs/operations.md, "Retention"), part of config.settings: how often the sweep
archives the memories whose time has come."""

from config.settings_env import env

# Every RETENTION_SWEEP_INTERVAL_SECONDS the retention sweep (memories/retention/sweep.py)
# writes the time the retention rules give the memories saved since its last run and archives
# the memories whose time has come (recall leaves them out from that time on, archived or
# not). 0: never; expired memories then stay active, left out of recall.
RETENTION_SWEEP_INTERVAL_SECONDS = env.int(
    "RETENTION_SWEEP_INTERVAL_SECONDS", default=300, minimum=0
)
RETENTION_BEAT_SCHEDULE = {}
if RETENTION_SWEEP_INTERVAL_SECONDS > 0:
    RETENTION_BEAT_SCHEDULE["expire-memories"] = {
        "task": "memories.tasks.expire_memories_task",
        "schedule": RETENTION_SWEEP_INTERVAL_SECONDS,
    }
