"""Descriptions are Markdown, rendered safely: no raw HTML passes (it is shown as text), link
targets are limited to http(s), mailto and relative ones, and every link opens as ``nofollow``."""

from __future__ import annotations

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
