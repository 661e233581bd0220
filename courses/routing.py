from django.urls import path

from .consumers import CourseConsumer

websocket_urlpatterns = [
    path("ws/courses/<int:course_id>/", CourseConsumer.as_asgi()),
]
