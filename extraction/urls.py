from django.urls import path
from rest_framework.routers import SimpleRouter

from extraction import api, settings_api

# Paths have no trailing slash: clients use them exactly as docs/api.md lists them.
router = SimpleRouter(trailing_slash=False)
router.register("extraction-runs", api.ExtractionRunViewSet, basename="extraction-run")

urlpatterns = [
    path("memories/extract/<str:topic_id>", api.ExtractTopicView.as_view(), name="extract-topic"),
    path(
        "memories/extract-work/<str:session_id>",
        api.ExtractWorkSessionView.as_view(),
        name="extract-work-session",
    ),
    path(
        "extraction-settings",
        settings_api.ExtractionSettingsView.as_view(),
        name="extraction-settings",
    ),
    *router.urls,
]
