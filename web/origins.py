"""Which websocket connections may open: a browser page of this site, or a script.

Browsers always send ``Origin``, so a page on another site is refused by checking it when it is
there; scripts (Python's websockets, wscat, curl) send none, and are let in like any API client.
"""

from channels.security.websocket import OriginValidator
from django.conf import settings


class SiteOrScriptOriginValidator(OriginValidator):
    async def __call__(self, scope, receive, send):
        if not any(name == b"origin" for name, _ in scope.get("headers", ())):
            return await self.application(scope, receive, send)
        return await super().__call__(scope, receive, send)


def site_or_script(application):
    """Like Channels' AllowedHostsOriginValidator, but a connection without Origin may open."""
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = ["localhost", "127.0.0.1", "[::1]"]
    return SiteOrScriptOriginValidator(application, allowed)
