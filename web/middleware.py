"""Django's middleware, run synchronously in one go.

Under ASGI, Django runs a middleware that can be async (Django's own all can) in the event loop,
and each of its ``process_request``/``process_response`` hooks then goes to the request's thread
and back: about twenty hops for the stack in ``MIDDLEWARE``, half the cost of a small request
(9.0 → 4.6 ms for ``/healthz`` through daphne here, ``bench.latency``'s notes in BENCHMARKS.md).
Declared synchronous only, the whole chain runs in the request's thread in one hop, and the
view with it; an async view (``/api/analyse``) is still awaited, in the event loop, from there.
"""

from __future__ import annotations

from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Message
from django.contrib.sessions.middleware import SessionMiddleware as _Session
from django.middleware.clickjacking import XFrameOptionsMiddleware as _XFrameOptions
from django.middleware.common import CommonMiddleware as _Common
from django.middleware.csp import ContentSecurityPolicyMiddleware as _ContentSecurityPolicy
from django.middleware.csrf import CsrfViewMiddleware as _CsrfView
from django.middleware.security import SecurityMiddleware as _Security
from whitenoise.middleware import WhiteNoiseMiddleware as _WhiteNoise


class SecurityMiddleware(_Security):
    async_capable = False


class WhiteNoiseMiddleware(_WhiteNoise):
    async_capable = False


class SessionMiddleware(_Session):
    async_capable = False


class CommonMiddleware(_Common):
    async_capable = False


class CsrfViewMiddleware(_CsrfView):
    async_capable = False


class AuthenticationMiddleware(_Authentication):
    async_capable = False


class MessageMiddleware(_Message):
    async_capable = False


class XFrameOptionsMiddleware(_XFrameOptions):
    async_capable = False


class ContentSecurityPolicyMiddleware(_ContentSecurityPolicy):
    async_capable = False
