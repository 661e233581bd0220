from django.urls import path

from .consumers import NewRunConsumer, RunConsumer

websocket_urlpatterns = [
    path("ws/runs/new/", NewRunConsumer.as_asgi()),  # before <run_id>: "new" is no run's id
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
]
