"""Snippet slugs: short, derived from the content, never rude.

A slug is the start of the SHA-256 of the snippet's content (code, its input, title, description,
device, runtime and run options) written in an alphabet without vowels (and without 0/1/l/o, which
look alike), so no word can be spelled in it. Twelve such characters are 57 bits: links cannot be enumerated, and the
chance that two of a billion snippets share one is about one in 300. A clash is still handled:
the next longer prefix is used, so a link, once given, always names the same content.
"""

from __future__ import annotations

import hashlib
import json

from executor import runtimes

ALPHABET = "23456789bcdfghjkmnpqrstvwxz"
LENGTH = 12


def content_hash(code: str, title: str, description: str, device: str, options: dict,
                 runtime: str = runtimes.FIRST, stdin: str = "") -> str:
    """The same content on the first runtime hashes as it did before there were runtimes, and
    without an input as it did before runs had one."""
    content = {"code": code, "title": title, "description": description, "device": device, "options": options}
    if runtime != runtimes.FIRST:
        content["runtime"] = runtime
    if stdin:
        content["stdin"] = stdin
    canonical = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def slug_candidates(digest: str):
    """Slugs for a content hash, shortest first: LENGTH characters, then one more each time."""
    n = int(digest, 16)
    chars = []
    while n:
        n, r = divmod(n, len(ALPHABET))
        chars.append(ALPHABET[r])
    text = "".join(chars)
    for length in range(LENGTH, len(text) + 1):
        yield text[:length]
