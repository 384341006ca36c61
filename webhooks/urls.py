from rest_framework.routers import SimpleRouter

from webhooks import api

# Paths have no trailing slash: clients use them exactly as docs/api.md lists them.
router = SimpleRouter(trailing_slash=False)
router.register("webhooks", api.WebhookEndpointViewSet, basename="webhook")

urlpatterns = router.urls
