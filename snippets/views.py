"""Shared snippets: the API, the page a link opens, its downloads and its embed. Opening any of
them runs nothing: a link shows the output its snippet was saved with."""

from __future__ import annotations

import base64
import json
from functools import wraps

from django.conf import settings
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.csp import csp_override
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from executor import events as ev
from playground.runtimes import current as current_runtime
from playground.runtimes import default as default_runtime
from playground.runtimes import jax_of
from playground.views import page_context
from web.api import api, parse_json, query_int
from web.clients import request_client
from web.errors import ActionError

from . import markdown
from .access import access_comparison, access_own_snippets, access_snippet_for_user
from .actions import check_create_comparison, check_create_snippet, do_hide_snippet
from .models import Snippet
from .notebook import notebook
from .serializers import comparison_detail, snippet_detail, snippet_summary

ME_PAGE = 50


def _snippet_or_404(request, slug: str) -> Snippet:
    snippet = access_snippet_for_user(slug, request.user)
    if snippet is None:
        raise Http404(_("no such snippet"))
    if snippet.removed_at is not None:
        raise ActionError(removed(snippet), status=410)
    return snippet


def removed(snippet: Snippet) -> str:
    """What a removed snippet's API answers (the reason is the staff's own words, as written)."""
    if snippet.removed_reason:
        return _("this snippet was removed (%(reason)s)") % {"reason": snippet.removed_reason}
    return _("this snippet was removed (by the staff)")


def _all_events(snippet: Snippet) -> list[dict]:
    if not snippet.run_id:
        return []
    return [e.data for e in snippet.run.events.order_by("seq")]


# The API ----------------------------------------------------------------------------------------

@api("POST")
def api_snippets(request):
    snippet, created = check_create_snippet(parse_json(request), user=request.user,
                                            client=request_client(request))
    return JsonResponse({"slug": snippet.slug, "url": request.build_absolute_uri(snippet.get_absolute_url()),
                         "created": created, "run": str(snippet.run_id) if snippet.run_id else None,
                         "runtime": snippet.runtime},
                        status=201 if created else 200)


@api("GET")
def api_snippet(request, slug):
    snippet = _snippet_or_404(request, slug)
    after = query_int(request, "after", 0)
    limit = query_int(request, "limit", settings.RUN_EVENTS_PAGE, minimum=1, maximum=settings.RUN_EVENTS_PAGE)
    return JsonResponse(snippet_detail(snippet, events_after=after, events_limit=limit))


def _signed_in(request):
    if not request.user.is_authenticated:
        raise ActionError(_("sign in (a session, or Authorization: Bearer <token>) to see your own snippets"),
                          status=401)
    return request.user


@api("GET")
def api_me_snippets(request):
    user = _signed_in(request)
    snippets = access_own_snippets(user, request.GET.get("q", ""))
    page = query_int(request, "page", 1, minimum=1)
    rows = list(snippets[(page - 1) * ME_PAGE: page * ME_PAGE + 1])
    return JsonResponse({"snippets": [snippet_summary(s) for s in rows[:ME_PAGE]],
                         "next_page": page + 1 if len(rows) > ME_PAGE else None})


@api("DELETE")
def api_me_snippet(request, slug):
    user = _signed_in(request)
    snippet = access_own_snippets(user).filter(slug=slug).first()
    if snippet is None:
        raise Http404(_("no such snippet of yours"))
    do_hide_snippet(snippet)
    return HttpResponse(status=204)


# Pages ------------------------------------------------------------------------------------------

def _preview(snippet: Snippet, request) -> dict:
    """What a pasted link unfurls into (Open Graph and Twitter cards)."""
    lines = [line for line in snippet.code.splitlines() if line.strip()][:4]
    description = markdown.plain(snippet.description) if snippet.description else " ⏎ ".join(lines)[:200]
    image = None
    if snippet.run_id and snippet.run.events.filter(type=ev.DISPLAY, data__mime="image/png").exists():
        image = request.build_absolute_uri(f"/s/{snippet.slug}/figure.png")
    return {"title": snippet.title or _("JAX Playground snippet %(slug)s") % {"slug": snippet.slug},
            "description": description or _("Code in the JAX Playground"),
            "url": request.build_absolute_uri(snippet.get_absolute_url()), "image": image}


def _page_data(snippet: Snippet) -> dict:
    """What the page's script needs: the code, its input and where its saved run is (never run on
    opening)."""
    return {
        "slug": snippet.slug, "code": snippet.code, "stdin": snippet.stdin, "title": snippet.title,
        "device": snippet.device,
        # The runtime its runs go to now (a retired id's successor), and the JAX it pins.
        "runtime": current_runtime(snippet.runtime), "runtime_jax": jax_of(snippet.runtime),
        "jax_version": snippet.jax_version or None, "jaxlib_version": snippet.jaxlib_version or None,
        "run": str(snippet.run_id) if snippet.run_id else None,
        "parent": snippet.parent.slug if snippet.parent_id else None,
        "created_at": snippet.created_at.isoformat(),
    }


def snippet_view(view):
    """A page of one snippet: 404 when there is none, the "removed" page (410) when the staff
    removed it, else ``view(request, snippet, ...)``."""

    @wraps(view)
    def wrapper(request, slug, *args, **kwargs):
        snippet = access_snippet_for_user(slug, request.user)
        if snippet is None:
            raise Http404(_("no such snippet"))
        if snippet.removed_at is not None:
            return render(request, "snippets/removed.html", {"snippet": snippet}, status=410)
        return view(request, snippet, *args, **kwargs)

    return wrapper


@require_GET
@ensure_csrf_cookie
@snippet_view
def snippet_page(request, snippet):
    forks = snippet.forks.filter(hidden_at__isnull=True, removed_at__isnull=True).order_by("created_at")
    context = page_context(request) | {
        "snippet": snippet, "snippet_data": _page_data(snippet), "preview": _preview(snippet, request),
        "description_html": markdown.render(snippet.description), "forks_count": forks.count(),
        "forks": [{"slug": fork.slug, "name": fork_name(fork, snippet)} for fork in forks[:5]],
        "newest": _newest_if_pinned_older(snippet),
    }
    response = render(request, "playground/index.html", context)
    if snippet.hidden_at is not None:
        response["X-Robots-Tag"] = "noindex"
    return response


def _newest_if_pinned_older(snippet: Snippet) -> dict | None:
    """The default runtime, when the snippet is pinned to another: its page offers to run there."""
    newest = default_runtime()
    if current_runtime(snippet.runtime) == newest:
        return None
    return {"id": newest, "jax": jax_of(newest)}


def fork_name(fork: Snippet, original: Snippet) -> str:
    """How the original's page names a fork: by its title, and by its link too where that title is
    the original's own (a fork shared by a script, or before the Share dialog marked a fork's
    title), so that a fork never reads as the original."""
    if not fork.title:
        return fork.slug
    return f"{fork.title} ({fork.slug})" if fork.title == original.title else fork.title


@require_GET
@snippet_view
def snippet_download(request, snippet, ext):
    url = request.build_absolute_uri(snippet.get_absolute_url())
    if ext == "py":
        response = HttpResponse(snippet.code, content_type="text/x-python; charset=utf-8")
        response["Content-Disposition"] = f'inline; filename="{snippet.slug}.py"'
    elif ext == "ipynb":
        response = HttpResponse(notebook(snippet, _all_events(snippet), url), content_type="application/x-ipynb+json")
        response["Content-Disposition"] = f'attachment; filename="{snippet.slug}.ipynb"'
    else:
        detail = snippet_detail(snippet, events_limit=ev.LOG_MAX_EVENTS)
        response = HttpResponse(json.dumps(detail, ensure_ascii=False, indent=1),
                                content_type="application/json; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def snippet_figure(request, slug):
    """The saved run's first figure: the image of the link's preview."""
    snippet = access_snippet_for_user(slug, request.user)
    if snippet is None or snippet.removed_at is not None or not snippet.run_id:
        raise Http404(_("no figure"))
    event = snippet.run.events.filter(type=ev.DISPLAY, data__mime="image/png").order_by("seq").first()
    if event is None:
        raise Http404(_("no figure"))
    response = HttpResponse(base64.b64decode(event.data.get("data") or ""), content_type="image/png")
    response["Cache-Control"] = "public, max-age=31536000, immutable"  # a snippet never changes
    return response


@require_GET
@xframe_options_exempt
@csp_override({**settings.SECURE_CSP, "frame-ancestors": ["*"]})  # meant for other sites' iframes
@ensure_csrf_cookie
@snippet_view
def embed(request, snippet):
    context = page_context(request) | {"snippet": snippet, "snippet_data": _page_data(snippet), "embed": True,
                                       "preview": _preview(snippet, request),
                                       "description_html": markdown.render(snippet.description)}
    return render(request, "playground/index.html", context)


# Comparisons -------------------------------------------------------------------------------------

@api("POST")
def api_comparisons(request):
    comparison = check_create_comparison(parse_json(request), user=request.user, client=request_client(request))
    detail = comparison_detail(comparison)
    return JsonResponse({**detail, "url": request.build_absolute_uri(detail["url"])}, status=201)


def _comparison_or_404(request, slug):
    comparison = access_comparison(slug, request.user)
    if comparison is None:
        raise Http404(_("no such comparison"))
    return comparison


@api("GET")
def api_comparison(request, slug):
    detail = comparison_detail(_comparison_or_404(request, slug))
    return JsonResponse({**detail, "url": request.build_absolute_uri(detail["url"])})


@require_GET
@ensure_csrf_cookie
def comparison_page(request, slug):
    """Two runs of one code side by side; opening it runs nothing (Run again makes a new one)."""
    comparison = _comparison_or_404(request, slug)
    detail = comparison_detail(comparison)
    a, b = detail["sides"]
    title = comparison.title or _("%(a)s vs %(b)s") % {"a": a["label"], "b": b["label"]}
    context = page_context(request) | {
        "comparison": comparison, "comparison_data": detail, "comparison_title": title,
        "preview": {"title": title, "url": request.build_absolute_uri(comparison.get_absolute_url()),
                    "description": _("The same code on %(a)s and on %(b)s, side by side")
                    % {"a": a["label"], "b": b["label"]}},
    }
    return render(request, "snippets/comparison.html", context)
