from django.urls import path, re_path

from . import views

urlpatterns = [
    path("", views.index, name="index"),
    path("api/devices", views.api_devices, name="api-devices"),
    path("api/runtimes", views.api_runtimes, name="api-runtimes"),
    path("api/runs", views.api_runs, name="api-runs"),
    path("api/runs/<str:run_id>", views.api_run, name="api-run"),
    path("api/runs/<str:run_id>/cancel", views.api_run_cancel, name="api-run-cancel"),
    path("api/runs/<str:run_id>/profile", views.api_run_profile, name="api-run-profile"),
    path("api/sessions", views.api_sessions, name="api-sessions"),
    path("api/sessions/<str:session_id>", views.api_session, name="api-session"),
    path("api/sessions/<str:session_id>/cells", views.api_session_cells, name="api-session-cells"),
    path("api/format", views.api_format, name="api-format"),
    path("api/analyse", views.api_analyse, name="api-analyse"),
    path("api/lint", views.api_lint, name="api-lint"),
    path("api/openapi.json", views.api_openapi, name="api-openapi"),
    # Last: any other /api/ path is a JSON 404, not the site's HTML one.
    re_path(r"^api(?:/(?P<rest>.*))?$", views.api_not_found),
]
