"""The serving entry point, loaded by each gunicorn worker (scripts/serve runs one, the
production set several) and by `manage.py runserver`: the model prepared before the first
request (so /readyz is 200 once the server listens), the embedded worker and scheduler
started when there is no broker, MCP at /mcp beside Django, and the garbage collector run
between requests rather than in them."""

import os
from collections.abc import Callable

from django.core.wsgi import get_wsgi_application

from config.collect_between_requests import CollectBetweenRequests

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_application = get_wsgi_application()

# After django.setup() (above): these read settings and models, and log through Django's
# logging configuration.
from django.conf import settings  # noqa: E402

from config.embedded import embedded_start  # noqa: E402
from config.mcp_mount import McpMount  # noqa: E402
from config.serving import prepare_serving_process  # noqa: E402
from config.unread_body import CloseWhenBodyUnread  # noqa: E402

prepare_serving_process()
embedded_start()
application: Callable = CloseWhenBodyUnread(McpMount(django_application))
if settings.GC_BETWEEN_REQUESTS:
    application = CollectBetweenRequests(application)
