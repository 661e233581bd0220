from django.urls import path

from .consumers import NewRunConsumer, RunConsumer
from .session_socket import SessionConsumer

websocket_urlpatterns = [
    path("ws/runs/new/", NewRunConsumer.as_asgi()),  # before <run_id>: "new" is no run's id
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/sessions/<str:session_id>/", SessionConsumer.as_asgi()),
]
