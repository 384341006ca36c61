from django.urls import path
from rest_framework.routers import SimpleRouter

from memories.api import (
    carrier_views,
    consolidation,
    entities,
    portability,
    retention,
    users,
    views,
)

# Paths have no trailing slash: clients use them exactly as docs/api.md lists them.
router = SimpleRouter(trailing_slash=False)
router.register("memories", views.MemoryViewSet, basename="memory")
router.register("admin/memories", views.AdminMemoryViewSet, basename="admin-memory")
router.register(
    "admin/consolidation-proposals",
    consolidation.ConsolidationProposalViewSet,
    basename="consolidation-proposal",
)
router.register("topics", carrier_views.TopicViewSet, basename="topic")
router.register("work-sessions", carrier_views.WorkSessionViewSet, basename="work-session")
router.register("projects", carrier_views.ProjectViewSet, basename="project")
router.register("personas", carrier_views.PersonaViewSet, basename="persona")
router.register("users", users.UserViewSet, basename="user")
router.register("entities", entities.EntityViewSet, basename="entity")
router.register("retention-rules", retention.RetentionRuleViewSet, basename="retention-rule")

urlpatterns = [
    path("auth/token", views.TokenView.as_view(), name="auth-token"),
    path("me", users.MeView.as_view(), name="me"),
    path("me/erase", users.MeEraseView.as_view(), name="me-erase"),
    path("me/profile", users.MeProfileView.as_view(), name="me-profile"),
    path("tools", views.ToolListView.as_view(), name="tools"),
    path("tools/<str:name>", views.ToolCallView.as_view(), name="tool-call"),
    # Before the router: its memories/{pk} route would take "export" and "import" for ids.
    path("memories/export", portability.ExportView.as_view(), name="memory-export"),
    path("memories/import", portability.ImportView.as_view(), name="memory-import"),
    path("memories/<str:pk>/restore", portability.RestoreView.as_view(), name="memory-restore"),
    *router.urls,
]
