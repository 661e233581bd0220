"""The language of the pages: a person's choice, kept by their browser (the language cookie) and,
signed in, by their account, so that it follows them to a browser that has never been told.

    POST /language        the control on every page (playground/_language.html): ``language``
                          (en, zh-hans) and ``next`` (a path of this site, where to go back to)
    AccountLanguage       a signed-in person's browser without the cookie is given the language
                          stored on the account, for this page and with the cookie for the next
    activate_scope_language
                          a websocket's consumer has no middleware: the scope's cookie, else its
                          Accept-Language, as LocaleMiddleware reads a request's

Without a choice anywhere, LocaleMiddleware takes the browser's Accept-Language, else English.
The account's language is ``accounts.Preferences``, looked up by name: web/ imports no app."""

from __future__ import annotations

from types import SimpleNamespace

from django.apps import apps
from django.conf import settings
from django.http import HttpResponseRedirect
from django.http.cookie import parse_cookie
from django.utils import translation
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

CODES = tuple(code for code, _name in settings.LANGUAGES)


def _preferences():
    return apps.get_model("accounts", "Preferences")


def _signed_in(request) -> bool:
    user = getattr(request, "user", None)
    return user is not None and user.is_authenticated


def set_language_cookie(response, language: str) -> None:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME, language, max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )


def back_to(request) -> str:
    """Where the control sends a person back to: ``next`` when it is a path of this site (never
    another site's, nor a scheme's: ``//evil.example``, ``javascript:``), else the home page."""
    target = request.POST.get("next") or ""
    if target.startswith("/") and url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return target
    return "/"


@require_POST
def set_language(request):
    """The control's form: the cookie, the account's choice when signed in, and back (303: the
    page is fetched again with GET, now in the language chosen). A language that is not one of
    the site's changes nothing."""
    response = HttpResponseRedirect(back_to(request), status=303)
    language = request.POST.get("language")
    if language not in CODES:
        return response
    set_language_cookie(response, language)
    if _signed_in(request):
        _preferences().objects.update_or_create(user=request.user, defaults={"language": language})
    return response


def account_language(user) -> str | None:
    """The language a signed-in person chose, if any."""
    found = _preferences().objects.filter(user=user).values_list("language", flat=True).first()
    return found if found in CODES else None


class AccountLanguage:
    """After AuthenticationMiddleware: a signed-in person whose browser has no language cookie (a
    browser they have just signed in on) gets the language their account keeps, at once and as
    the cookie. A browser with the cookie keeps its own: a choice made there is the latest."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        language = None
        if settings.LANGUAGE_COOKIE_NAME not in request.COOKIES and _signed_in(request):
            language = account_language(request.user)
            if language is not None:
                translation.activate(language)
                request.LANGUAGE_CODE = translation.get_language()
        response = self.get_response(request)
        if language is not None:
            set_language_cookie(response, language)
        return response


def scope_language(scope) -> str:
    """The language of a websocket's page: its language cookie, else its Accept-Language (the
    request LocaleMiddleware would have read), else the default."""
    cookies = scope.get("cookies")  # Channels' CookieMiddleware parses them; else the header
    headers = {name: value.decode("latin1") for name, value in scope.get("headers", ())}
    if cookies is None:
        cookies = parse_cookie(headers.get(b"cookie", ""))
    request = SimpleNamespace(COOKIES=cookies, META={"HTTP_ACCEPT_LANGUAGE": headers.get(b"accept-language", "")})
    return translation.get_language_from_request(request)


def activate_scope_language(scope) -> str:
    """Activate the scope's language for what the consumer says from here on (refusals, reasons
    for a close); returns it."""
    language = scope_language(scope)
    translation.activate(language)
    return language
