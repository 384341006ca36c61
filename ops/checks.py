"""System checks of the deployment (`manage.py check --deploy`)."""

from django.conf import settings
from django.core.checks import Tags, Warning, register

LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]"}


@register(Tags.security, Tags.caches, deploy=True)
def shared_cache_check(app_configs, **kwargs) -> list[Warning]:
    """A site served beyond this machine runs several processes: with a local-memory cache
    each counts its own API throttle quota (extraction requests per user)."""
    backend = settings.CACHES["default"]["BACKEND"]
    if backend.endswith("LocMemCache") and not set(settings.ALLOWED_HOSTS) <= LOCAL_HOSTS:
        return [
            Warning(
                "The cache is local to each process, so every web process counts its own "
                "API throttle quota.",
                hint="Set CACHE_URL to a cache all processes share, e.g. redis://127.0.0.1:6379/1.",
                id="ops.W001",
            )
        ]
    return []
