from django.contrib import admin
from django.urls import include, path

admin.site.site_header = "JAX Playground administration"
admin.site.site_title = "JAX Playground admin"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("", include("accounts.site_urls")),  # /api/me/tokens, /me/... pages
    path("", include("snippets.urls")),
    path("", include("courses.api_urls")),  # /api/courses, /api/assignments, /api/submissions
    path("", include("courses.site_urls")),  # /courses/... pages
    path("", include("playground.urls")),
]
