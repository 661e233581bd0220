from django.contrib import admin
from django.urls import include, path

from web import health, languages, metrics

admin.site.site_header = "JAX Playground administration"
admin.site.site_title = "JAX Playground admin"

# The 500 page with its request: its language control needs the page's path and CSRF token.
handler500 = "web.errors.server_error"

urlpatterns = [
    # For load balancers: no authentication, no CSRF, no rate limit (web/health.py).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    # For Prometheus: METRICS_ALLOW's addresses or METRICS_TOKEN (web/metrics.py).
    path("metrics", metrics.metrics, name="metrics"),
    # The English / 中文 control on every page (web/languages.py).
    path("language", languages.set_language, name="set-language"),
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("", include("accounts.site_urls")),  # /api/me/tokens, /me/... pages
    path("", include("snippets.urls")),
    path("", include("courses.api_urls")),  # /api/courses, /api/assignments, /api/submissions
    path("", include("courses.site_urls")),  # /courses/... pages
    path("", include("notebooks.urls")),  # /notebooks/..., /n/<slug>, /api/notebooks, /api/cells/names
    path("", include("playground.urls")),
]
