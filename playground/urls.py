from django.urls import path

from . import views

urlpatterns = [
    path("", views.index, name="index"),
    path("api/devices", views.api_devices, name="api-devices"),
    path("api/runs", views.api_runs, name="api-runs"),
    path("api/runs/<str:run_id>", views.api_run, name="api-run"),
    path("api/runs/<str:run_id>/cancel", views.api_run_cancel, name="api-run-cancel"),
    path("api/openapi.json", views.api_openapi, name="api-openapi"),
]
