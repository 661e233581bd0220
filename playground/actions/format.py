"""The editor's formatter: ruff's (Black-compatible) formatter, run on the server on the code
the person sends. Notebook habits the playground accepts (``%timeit`` lines, ``!`` lines) are
not Python, so each is set aside as a bare name (a statement of its own, which ruff neither moves
nor joins to what follows, as it would a comment) and put back after."""

from __future__ import annotations

import re
import subprocess

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from ruff.__main__ import find_ruff_bin

from web.errors import ActionError
from web.clients import Client
from web.ratelimit import check_rate_in_room

TIMEOUT_S = 5
# A line magic (%timeit, %time, %%...) or a shell line (!pip ...), at any indentation.
MAGIC = re.compile(r"^([ \t]*)([%!].*)$")
PLACEHOLDER = "_playground_magic_{}_"
PLACEHOLDER_LINE = re.compile(r"^([ \t]*)_playground_magic_(\d+)_$")
# ruff's parse errors: "error: Failed to parse <file>:3:5: Expected an expression".
PARSE_ERROR = re.compile(r"Failed to parse \S*?:(\d+):(\d+): (.*)")
FORMATTING_REQUESTS = gettext_lazy("formatting requests")


def check_format(payload, *, client: Client) -> str:
    if not isinstance(payload, dict) or not isinstance(payload.get("code"), str):
        raise ActionError(_('send {"code": "..."}: the code to format, as a string'))
    code = payload["code"]
    size = len(code.encode("utf-8", "surrogatepass"))
    if size > settings.RUN_MAX_CODE_BYTES:
        raise ActionError(_("the code is %(size)s bytes; the limit is %(limit)s bytes")
                          % {"size": size, "limit": settings.RUN_MAX_CODE_BYTES}, status=413)
    check_rate_in_room("format", client.person, client.room, settings.FORMAT_RATE_LIMIT_PER_MINUTE, 60,
                       FORMATTING_REQUESTS)
    return do_format(code)


def do_format(code: str) -> str:
    magics: list[str] = []

    def aside(match: re.Match) -> str:
        magics.append(match.group(2))
        return match.group(1) + PLACEHOLDER.format(len(magics) - 1)

    source = "\n".join(MAGIC.sub(aside, line) for line in code.split("\n"))
    try:
        done = subprocess.run(
            [find_ruff_bin(), "format", "--no-cache", "--isolated", "--stdin-filename", "snippet.py", "-"],
            input=source.encode("utf-8", "surrogatepass"), capture_output=True, timeout=TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired:
        raise ActionError(_("the formatter took longer than %(seconds)s s; the code was left as it was")
                          % {"seconds": TIMEOUT_S}, status=503) from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        parsed = PARSE_ERROR.search(message)
        if parsed:
            line, column, what = parsed.groups()
            raise ActionError(_("the code is not valid Python at line %(line)s, column %(column)s: %(what)s")
                              % {"line": line, "column": column, "what": what}, status=422)
        raise ActionError(_("the formatter failed: %(reason)s")
                          % {"reason": message.splitlines()[-1] if message else done.returncode}, status=422)
    formatted = done.stdout.decode("utf-8", "surrogatepass")

    def back(line: str) -> str:
        match = PLACEHOLDER_LINE.match(line)
        if not match or int(match.group(2)) >= len(magics):
            return line
        return match.group(1) + magics[int(match.group(2))]

    return "\n".join(back(line) for line in formatted.split("\n"))
