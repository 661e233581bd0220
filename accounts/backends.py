"""Django's own authentication, throttled: a sign-in from a client or to an account over its
limit of failures is refused before the password is hashed, wherever it comes from (the sign-in
page, the admin's). The sign-in page checks first itself, to say why (``accounts.forms``)."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from web.clients import request_client_key
from web.errors import ActionError

from .actions import check_sign_in


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is not None and request is not None:
            try:
                check_sign_in(username=username, client=request_client_key(request))
            except ActionError:
                raise PermissionDenied from None  # no other backend is tried
        return super().authenticate(request, username=username, password=password, **kwargs)
