"""The account pages: sign-up (Django's own views do sign-in, sign-out and passwords), the
account page with its API tokens, and a signed-in person's snippets and runs. Each page parses,
checks access, calls one action and responds; feedback travels in Django's messages."""

from __future__ import annotations

from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import OuterRef, Subquery
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, Resolver404, resolve, reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from playground.actions.runs import check_cancel_run, check_delete_run
from snippets.access import access_own_snippets
from snippets.actions import do_hide_snippet
from snippets.models import Snippet
from web.clients import request_client_key
from web.errors import ActionError

from .access import access_own_run, access_own_runs, access_own_token, access_own_tokens
from .actions import check_create_token, check_password_reset, check_sign_up, do_revoke_token
from .forms import EmailForm, SignInForm, SignUpForm, sentence

PAGE = 50
# The secret of a token just made, kept in the session from the POST that made it to the page
# that shows it, once: a reload or the back button shows it no more.
NEW_TOKEN_KEY = "accounts.new_token"
# A run's status as My runs words it (the status's name stays in the row's class).
RUN_STATUS_WORDS = {
    "queued": gettext_lazy("queued"), "starting": gettext_lazy("starting"), "running": gettext_lazy("running"),
    "succeeded": gettext_lazy("succeeded"), "failed": gettext_lazy("failed"), "timed_out": gettext_lazy("timed out"),
    "cancelled": gettext_lazy("cancelled"), "limit_exceeded": gettext_lazy("limit exceeded"),
    "lost": gettext_lazy("lost"),
}


def _with_headers(response, headers: dict):
    for name, value in headers.items():
        response[name] = value
    return response


def _status_words(status: str) -> str:
    return str(RUN_STATUS_WORDS.get(status, status.replace("_", " ")))


def _first_line(code: str) -> str:
    return next((line.strip() for line in code.splitlines() if line.strip()), "")[:120]


# Sign-up and password resets ---------------------------------------------------------------------

@never_cache
@require_http_methods(["GET", "POST"])
def signup(request):
    """Sign up, then go on to ``next`` (a page of this site). A page that people sign up to reach
    may have a sign-up of its own (``_own_sign_up``: a course's join link, whose sign-up names the
    course and counts apart from the address's): the sign-up link of the sign-in page it sent
    them to leads there."""
    if request.user.is_authenticated:
        return redirect("account")
    next_url = request.POST.get("next", request.GET.get("next", ""))
    if not url_has_allowed_host_and_scheme(next_url, {request.get_host()}, require_https=request.is_secure()):
        next_url = ""
    own = _own_sign_up(next_url) if request.method == "GET" and next_url else None
    if own is not None:
        return redirect(own)
    form = SignUpForm(request.POST if request.method == "POST" else None)
    context = {"form": form, "next": next_url}
    if form.is_bound and form.is_valid():
        try:
            user = check_sign_up(form, client=request_client_key(request))
        except ActionError as exc:
            form.add_error(None, sentence(exc.message))
            return _with_headers(render(request, "accounts/signup.html", context, status=exc.status), exc.headers)
        login(request, user)
        return redirect(next_url or settings.LOGIN_REDIRECT_URL)
    return render(request, "accounts/signup.html", context)


def _own_sign_up(next_url: str) -> str | None:
    """The sign-up of its own of the page at ``next_url``: the URL named "<the page's name>-signup"
    with the page's arguments (``course-join-signup``, say), or None when it has none. Accounts
    know no app: an app that takes people in through a page of its own names its sign-up so."""
    return _own_page(next_url, "signup")


def _own_sign_in(next_url: str) -> str | None:
    """The sign-in of its own of the page at ``next_url`` ("<the page's name>-signin", as
    ``_own_sign_up``), with ``next`` kept: a course's join link has one that names the course."""
    own = _own_page(next_url, "signin")
    return None if own is None else f"{own}?{urlencode({'next': next_url})}"


def _own_page(next_url: str, kind: str) -> str | None:
    try:
        match = resolve(urlsplit(next_url).path)
        return reverse(f"{match.url_name}-{kind}", args=match.args, kwargs=match.kwargs)
    except (Resolver404, NoReverseMatch):
        return None


class LoginView(auth_views.LoginView):
    """Django's, through our template, with sign-ins throttled (``SignInForm``): refused, the page
    answers 429 with a Retry-After and says why. An app's own sign-in page (a course's join link's)
    subclasses it with a template of its own."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True
    authentication_form = SignInForm
    # Whether a page with a sign-in of its own sends there (that page itself says no).
    sends_to_own_sign_in = True

    def get(self, request, *args, **kwargs):
        """A page with a sign-in of its own (``_own_sign_in``) gets it: the sign-in that a
        course's join link sends to names the course and offers signing up first."""
        next_url = request.GET.get("next", "")
        own = _own_sign_in(next_url) if self.sends_to_own_sign_in and next_url else None
        if (own is not None and not request.user.is_authenticated
                and url_has_allowed_host_and_scheme(next_url, {request.get_host()})):
            return redirect(own)
        return super().get(request, *args, **kwargs)

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled is not None:
            response.status_code = form.throttled.status
            _with_headers(response, form.throttled.headers)
        return response


class PasswordResetView(auth_views.PasswordResetView):
    """Django's, through our templates, with a rate limit on the emails it sends."""

    template_name = "accounts/password_reset_form.html"
    email_template_name = "accounts/password_reset_email.txt"
    subject_template_name = "accounts/password_reset_subject.txt"

    def form_valid(self, form):
        try:
            check_password_reset(client=request_client_key(self.request))
        except ActionError as exc:
            form.add_error(None, exc.message)
            response = self.form_invalid(form)
            response.status_code = exc.status
            return _with_headers(response, exc.headers)
        return super().form_valid(form)


# The account page and its tokens -----------------------------------------------------------------

@never_cache
@login_required
@require_GET
def account(request):
    return render(request, "accounts/account.html", {
        "nav": "account",
        "tokens": access_own_tokens(request.user),
        "new_token": request.session.pop(NEW_TOKEN_KEY, None),
        "email_form": EmailForm(instance=request.user),
    })


@login_required
@require_POST
def account_email(request):
    form = EmailForm(request.POST, instance=request.user)
    if not form.is_valid():
        return render(request, "accounts/account.html", {
            "nav": "account", "tokens": access_own_tokens(request.user), "email_form": form,
        }, status=400)
    form.save()
    messages.success(request, _("Email saved") if form.cleaned_data["email"] else _("Email removed"))
    return redirect("account")


@login_required
@require_POST
def account_token_create(request):
    try:
        days = request.POST.get("expires_in_days", "")
        token, secret = check_create_token({"name": request.POST.get("name", ""),
                                            "expires_in_days": int(days) if days.isdigit() else None},
                                           user=request.user)
    except ActionError as exc:
        messages.error(request, exc.message)
        return redirect("account")
    request.session[NEW_TOKEN_KEY] = {"name": token.name, "token": secret}
    messages.success(request, _("Token created"))
    return redirect("account")


@login_required
@require_POST
def account_token_revoke(request, token_id):
    token = access_own_token(request.user, token_id)
    if token is None:
        raise Http404(_("no such token of yours"))
    do_revoke_token(token)
    messages.success(request, _("Token %(name)s revoked: scripts using it now get 401")
                     % {"name": token.name or token.prefix + "…"})
    return redirect("account")


# My snippets and my runs -------------------------------------------------------------------------

def _back(name: str, request) -> str:
    """The list a delete button was pressed on: same search, same page."""
    query = {k: request.POST[k] for k in ("q", "page") if request.POST.get(k)}
    return reverse(name) + (f"?{urlencode(query)}" if query else "")


@never_cache
@login_required
@require_GET
def my_snippets(request):
    q = request.GET.get("q", "").strip()
    snippets = access_own_snippets(request.user, q)
    page = Paginator(snippets, PAGE).get_page(request.GET.get("page"))
    rows = [{"snippet": s, "label": s.title or _first_line(s.code) or _("(empty)"), "is_code": not s.title}
            for s in page]
    return render(request, "accounts/my_snippets.html", {"nav": "snippets", "q": q, "page": page, "rows": rows})


@login_required
@require_POST
def my_snippet_delete(request, slug):
    snippet = access_own_snippets(request.user).filter(slug=slug).first()
    if snippet is None:
        raise Http404(_("no such snippet of yours"))
    do_hide_snippet(snippet)
    messages.success(request, _("Snippet deleted"))
    return redirect(_back("my-snippets", request))


@never_cache
@login_required
@require_GET
def my_runs(request):
    # The first snippet that keeps each run (as its saved output), in the same query.
    keeper = Snippet.objects.filter(run=OuterRef("pk")).order_by("created_at").values("slug")[:1]
    runs = access_own_runs(request.user).annotate(kept_by=Subquery(keeper)).order_by("-created_at")
    page = Paginator(runs, PAGE).get_page(request.GET.get("page"))
    rows = [{"run": r, "label": _first_line(r.code) or _("(empty)"), "status": _status_words(r.status)} for r in page]
    return render(request, "accounts/my_runs.html", {"nav": "runs", "page": page, "rows": rows})


@login_required
@require_POST
def my_run_delete(request, run_id):
    run = access_own_run(request.user, run_id)
    if run is None:
        raise Http404(_("no such run of yours"))
    try:
        check_delete_run(run)
    except ActionError as exc:
        messages.error(request, exc.message[:1].upper() + exc.message[1:])
    else:
        messages.success(request, _("Run deleted"))
    return redirect(_back("my-runs", request))


@login_required
@require_POST
def my_run_cancel(request, run_id):
    """Cancel a queued or running run of one's own (one whose page was closed): the same action as
    POST /api/runs/<id>/cancel, which the page's script calls instead, staying on the page."""
    run = access_own_run(request.user, run_id)
    if run is None:
        raise Http404(_("no such run of yours"))
    try:
        status = check_cancel_run(run, who=request_client_key(request))
    except ActionError as exc:
        messages.error(request, exc.message[:1].upper() + exc.message[1:])
    else:
        messages.success(request, _("Run cancelled") if status == "cancelled"
                         else _("Cancelling the run: it stops within a second or two"))
    return redirect(_back("my-runs", request))
