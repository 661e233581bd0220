"""Descriptions are Markdown, rendered safely: no raw HTML passes (it is shown as text), no image
(a request to another site from every reader), link targets are limited to http(s), mailto and
relative ones, and every link opens as ``nofollow``. A notebook's Markdown cell gets the same
rendering (``for_notebook``): Jupyter and Colab render raw HTML and images in Markdown."""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt


@lru_cache(maxsize=1)
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.validateLink = lambda url: url.strip().lower().startswith(("http://", "https://", "mailto:", "/", "#"))
    default = md.renderer.rules.get("link_open")

    def link_open(renderer, tokens, idx, options, env):
        tokens[idx].attrSet("rel", "nofollow noopener")
        return default(tokens, idx, options, env) if default else renderer.renderToken(tokens, idx, options, env)

    md.add_render_rule("link_open", link_open)
    md.disable("image")  # an image is a request to another site from every visitor's browser
    return md


def render(text: str) -> str:
    return _md().render(text or "")


def plain(text: str, limit: int = 200) -> str:
    """The first words of a description without markup, for link previews."""
    words = " ".join((text or "").replace("#", " ").replace("*", " ").replace("`", "").split())
    return words if len(words) <= limit else words[: limit - 1].rsplit(" ", 1)[0] + "…"


# Every ASCII punctuation character may be escaped with a backslash in CommonMark.
_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")


def for_notebook(text: str) -> str:
    """A description for a notebook's Markdown cell, shown as the page shows it: the page's own
    HTML, on one line, so that the whole of it is one HTML block, whose inside a Markdown renderer
    passes as it is (a blank line would end the block, and what followed would be Markdown
    again: an image, raw HTML). Newlines become ``&#10;``, the same whitespace in HTML, and in a
    code block the same line break."""
    return render(text).strip().replace("\r", "").replace("\n", "&#10;")


def escape(text: str) -> str:
    """Plain text (a title) as Markdown that shows it as it is: no markup, no raw HTML."""
    return _PUNCTUATION.sub(r"\\\1", " ".join(text.split()))
