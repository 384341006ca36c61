from django.urls import path

from extraction import api

urlpatterns = [
    path("memories/extract/<str:topic_id>", api.ExtractTopicView.as_view(), name="extract-topic"),
    path(
        "memories/extract-work/<str:session_id>",
        api.ExtractWorkSessionView.as_view(),
        name="extract-work-session",
    ),
]
