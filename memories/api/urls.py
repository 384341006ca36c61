from django.urls import path
from rest_framework.routers import SimpleRouter

from memories.api import users, views

# Paths have no trailing slash (SPEC §3).
router = SimpleRouter(trailing_slash=False)
router.register("memories", views.MemoryViewSet, basename="memory")
router.register("admin/memories", views.AdminMemoryViewSet, basename="admin-memory")
router.register("topics", views.TopicViewSet, basename="topic")
router.register("work-sessions", views.WorkSessionViewSet, basename="work-session")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("personas", views.PersonaViewSet, basename="persona")
router.register("users", users.UserViewSet, basename="user")

urlpatterns = [
    path("auth/token", views.TokenView.as_view(), name="auth-token"),
    path("me", users.MeView.as_view(), name="me"),
    path("me/erase", users.MeEraseView.as_view(), name="me-erase"),
    path("tools", views.ToolsView.as_view(), name="tools"),
    path("tools/<str:name>", views.ToolsView.as_view(), name="tool-call"),
    *router.urls,
]
