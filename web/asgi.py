"""The ASGI application: Django for HTTP, Channels for websockets (daphne serves both), and in
front of Django the assistants' MCP endpoint at /mcp (assistants/asgi.py)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
# What get_asgi_application does, with the middleware declared synchronous in between.
django.setup(set_prefix=False)

from django.core.handlers.asgi import ASGIHandler  # noqa: E402 - needs Django set up first

from web.middleware import run_synchronously  # noqa: E402

run_synchronously()
django_asgi_app = ASGIHandler()

from channels.auth import AuthMiddlewareStack  # noqa: E402 - needs Django set up first
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from assistants.asgi import mount  # noqa: E402 - needs Django set up first
from courses.routing import websocket_urlpatterns as course_sockets  # noqa: E402
from playground.routing import websocket_urlpatterns  # noqa: E402
from web.origins import site_or_script  # noqa: E402 - needs Django set up first

def websocket_middleware(inner):
    """settings.WEBSOCKET_MIDDLEWARE around the sockets' routes, the first outermost, as Django's
    MIDDLEWARE is for requests: the apps' own (a token's owner) named as strings."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    for path in reversed(settings.WEBSOCKET_MIDDLEWARE):
        inner = import_string(path)(inner)
    return inner


application = ProtocolTypeRouter({
    "http": mount(django_asgi_app),
    "websocket": site_or_script(AuthMiddlewareStack(websocket_middleware(
        URLRouter(websocket_urlpatterns + course_sockets)))),
})
