from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from memories.api.root import ApiRootView, SiteRootView

# Swagger UI under the site's Content-Security-Policy: the split view serves its start-up
# script from the page's own URL (?script) instead of inline; the UI sets inline styles.
docs_view = csp_update({"style-src": ["'unsafe-inline'"]})(
    SpectacularSwaggerSplitView.as_view(url_name="schema")
)

urlpatterns = [
    path("", SiteRootView.as_view(), name="root"),
    path("api/", ApiRootView.as_view(), name="api-root"),
    path("api/", include("extraction.urls")),
    path("api/", include("memories.api.urls")),
    path("api/", include("webhooks.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", docs_view, name="docs"),
    path("admin/", admin.site.urls),
    path("review/", include("review.urls")),
    path("", include("ops.urls")),  # /healthz, /readyz, /metrics
]
