"""Where a new notebook's cells come from besides its page: a shared snippet, a shared notebook,
or a .ipynb file. A URL is one of this site's own export links, read from the database here: the
server never fetches a URL (another site's, or its own over the network)."""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from snippets.access import access_snippet_for_user
from snippets.models import Snippet
from web.errors import ActionError

from . import ipynb
from .access import access_shared_notebook
from .actions import new_cell_id

SHARED_PATH = re.compile(r"^/(?P<kind>n|s)/(?P<slug>[0-9a-z]{1,32})(?:\.ipynb)?/?$")
URL_MAX = 2000
ACCEPTED = gettext_lazy("this site's own links: /n/<slug>.ipynb (a shared notebook) or /s/<slug>.ipynb (a shared "
                        "snippet)")


def snippet_cells(snippet: Snippet) -> list[dict]:
    """A snippet as a notebook: its title and description as a Markdown cell (when it has them),
    then its code, showing its saved run."""
    cells = []
    header = "\n\n".join(part for part in (f"# {snippet.title}" if snippet.title else "", snippet.description)
                         if part)
    if header:
        cells.append({"id": new_cell_id(), "type": "markdown", "source": header})
    code = {"id": new_cell_id(), "type": "code", "source": snippet.code}
    if snippet.run_id:
        code["run"] = str(snippet.run_id)
    return [*cells, code]


def check_snippet(slug, user) -> Snippet:
    snippet = access_snippet_for_user(slug, user)
    if snippet is None:
        raise ActionError(_("there is no shared snippet %(slug)s") % {"slug": repr(str(slug)[:40])}, status=404)
    if snippet.removed_at is not None:
        if snippet.removed_reason:
            message = _("the snippet /s/%(slug)s was removed (%(reason)s)")
        else:
            message = _("the snippet /s/%(slug)s was removed (by the staff)")
        raise ActionError(message % {"slug": snippet.slug, "reason": snippet.removed_reason}, status=410)
    return snippet


def from_snippet(slug, user) -> dict:
    snippet = check_snippet(slug, user)
    return {"title": snippet.title, "cells": snippet_cells(snippet), "runtime": snippet.runtime,
            "device": snippet.device}


def check_import_url(url, *, host: str, user) -> dict:
    """``{"title", "cells", "runtime", "device"}`` of the notebook or snippet one of the site's own
    export links names: a path (``/n/<slug>.ipynb``), or a full URL whose host is this site's."""
    if not isinstance(url, str) or not url.strip():
        raise ActionError(_("'%(name)s' must be one of %(accepted)s") % {"name": "url", "accepted": ACCEPTED})
    if len(url) > URL_MAX:
        raise ActionError(_("'%(name)s' is %(size)s characters; the limit is %(limit)s")
                          % {"name": "url", "size": len(url), "limit": URL_MAX})
    parts = urlsplit(url.strip())
    if parts.scheme not in ("", "http", "https") or (parts.scheme and not parts.netloc):
        raise ActionError(_("only %(accepted)s can be imported") % {"accepted": ACCEPTED})
    if parts.netloc and parts.netloc.lower() != host.lower():
        raise ActionError(_("only %(accepted)s can be imported, never another site's: download the file and import "
                            "it instead") % {"accepted": ACCEPTED})
    match = SHARED_PATH.fullmatch(unquote(parts.path))
    if match is None:
        raise ActionError(_("only %(accepted)s can be imported") % {"accepted": ACCEPTED})
    if match["kind"] == "s":
        return from_snippet(match["slug"], user)
    shared = access_shared_notebook(match["slug"])
    if shared is None:
        raise ActionError(_("there is no shared notebook /n/%(slug)s") % {"slug": match["slug"]}, status=404)
    return {"title": shared.title, "cells": [{**cell} for cell in shared.cells], "runtime": shared.runtime,
            "device": shared.device}


def check_import_file(upload) -> dict:
    """An uploaded .ipynb (a Django ``UploadedFile``), read no further than the limit allows."""
    if upload is None:
        raise ActionError(_('send the .ipynb file as the multipart field \'file\', or JSON {"url": <link>}'))
    return ipynb.parse(upload.read(settings.NOTEBOOK_IMPORT_MAX_BYTES + 1))
