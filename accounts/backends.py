"""Django's own authentication, throttled: a sign-in from a client or to an account over its
limit of failures is refused before the password is hashed, wherever it comes from (the sign-in
page, the admin's). Each attempt takes its place among the failures before its password is
checked and gives it back once it succeeded (``accounts.actions.check_sign_in``). A refusal is
kept on the request (``sign_in_refused``), for the sign-in page to say why (``accounts.forms``)."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from web.clients import request_client_key
from web.errors import ActionError

from .actions import check_sign_in, do_sign_in_succeeded


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None or request is None:
            return super().authenticate(request, username=username, password=password, **kwargs)
        try:
            reserved = check_sign_in(username=username, client=request_client_key(request))
        except ActionError as exc:
            request.sign_in_refused = exc
            raise PermissionDenied from None  # no other backend is tried
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is not None:
            do_sign_in_succeeded(reserved)
        return user
