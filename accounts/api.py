"""The API of what is one's own: personal API tokens (made from a signed-in session, listed and
revoked) and drafts (the code one is working on, kept for another browser)."""

from __future__ import annotations

from django.http import Http404, HttpResponse, JsonResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.api import api, parse_json
from web.errors import ActionError

from .access import access_own_draft, access_own_drafts, access_own_token, access_own_tokens
from .actions import check_create_token, check_draft_rate, check_save_draft, do_delete_draft, do_revoke_token
from .serializers import draft_detail, token_summary

YOUR_TOKENS = gettext_lazy("your API tokens")
YOUR_DRAFTS = gettext_lazy("your drafts")


def _signed_in(request, what: str = YOUR_TOKENS):
    if not request.user.is_authenticated:
        raise ActionError(_("sign in (a session, or Authorization: Bearer <token>) to manage %(what)s")
                          % {"what": what}, status=401)
    return request.user


@api("GET", "POST")
def api_me_tokens(request):
    user = _signed_in(request)
    if request.method == "GET":
        return JsonResponse({"tokens": [token_summary(t) for t in access_own_tokens(user)]})
    # A leaked token must not be able to make itself a successor that outlives its revocation.
    if request.auth_token is not None:
        raise ActionError(_("a token cannot make tokens: sign in and make one on your account page (/accounts/)"),
                          status=403)
    token, secret = check_create_token(parse_json(request), user=user)
    return JsonResponse(token_summary(token) | {"token": secret}, status=201)


@api("DELETE")
def api_me_token(request, token_id):
    user = _signed_in(request)
    token = access_own_token(user, token_id)
    if token is None:
        raise Http404(_("no such token of yours"))
    do_revoke_token(token)
    return HttpResponse(status=204)


@api("GET")
def api_me_drafts(request):
    user = _signed_in(request, YOUR_DRAFTS)
    return JsonResponse({"drafts": [draft_detail(d) for d in access_own_drafts(user)]})


@api("PUT", "DELETE")
def api_me_draft(request, key):
    user = _signed_in(request, YOUR_DRAFTS)
    if request.method == "PUT":
        return JsonResponse(draft_detail(check_save_draft(key, parse_json(request), user=user)))
    check_draft_rate(user)
    draft = access_own_draft(user, key)
    if draft is None:
        raise Http404(_("no such draft of yours"))
    do_delete_draft(draft)
    return HttpResponse(status=204)
