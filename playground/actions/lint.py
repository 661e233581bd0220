"""Problems as you type: syntax errors, and the lints a person wants before running (undefined
names, unused imports and variables, a name used before it is assigned), for the editor's
markers. ruff's pyflakes rules (``F``) on the code as text, through an async subprocess so that
nothing waits in a thread; ``%timeit`` and ``!`` lines are read as the analyser reads them
(``executor.analyser.wire.as_python``). An undefined name that the code assigns further down
is said to be used before it is assigned (the line that assigns it named)."""

from __future__ import annotations

import asyncio
import json

from asgiref.sync import sync_to_async
from django.conf import settings
from ruff.__main__ import find_ruff_bin

from executor.analyser.wire import as_python
from executor.runner.bindings import bindings
from playground.actions.analyse import reject_lone_surrogates
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.api import text
from web.errors import ActionError
from web.clients import Client
from web.ratelimit import check_rate_in_room

TIMEOUT_S = 5
MAX_PROBLEMS = 100
# Faded, as unused code is in VS Code, rather than underlined as an error.
UNNECESSARY = {"F401", "F841", "F811"}
WARNINGS = {"F401", "F841", "F811", "F403", "F405", "F541"}
CHECKS = gettext_lazy("checks of the code")


def check_lint(payload, *, client: Client) -> str:
    if not isinstance(payload, dict):
        raise ActionError(_('send {"code": "..."}: the code to check, as a string'))
    code = text(payload, "code", settings.RUN_MAX_CODE_BYTES, required=True, status=413)
    reject_lone_surrogates(code)
    check_rate_in_room("lint", client.person, client.room, settings.LINT_RATE_LIMIT_PER_MINUTE, 60,
                       CHECKS)
    return code


async def do_lint(code: str) -> dict:
    source, shifts = as_python(code)
    proc = await asyncio.create_subprocess_exec(
        find_ruff_bin(), "check", "--output-format", "json", "--isolated", "--no-cache", "--select", "F",
        "--stdin-filename", "snippet.py", "-",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, _errors = await asyncio.wait_for(proc.communicate(source.encode("utf-8", "surrogatepass")), TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        return {"problems": [], "note": _("the check took longer than %(seconds)s s") % {"seconds": TIMEOUT_S}}
    try:
        found = json.loads(out or b"[]")
    except ValueError:
        found = []
    problems = [_problem(f, shifts) for f in found[:MAX_PROBLEMS]]
    problems = await sync_to_async(before_assignment, thread_sensitive=False)(problems, source)
    return {"problems": sorted(problems, key=lambda p: (p["line"], p["column"]))[:MAX_PROBLEMS]}


def _column(column: int, line: int, shifts: dict[int, int]) -> int:
    return column + shifts.get(line, 0) if shifts.get(line) else column


def _problem(found: dict, shifts: dict[int, int]) -> dict:
    code = found.get("code") or "syntax"
    if code == "invalid-syntax":
        code = "syntax"
    start, end = found.get("location") or {}, found.get("end_location") or {}
    line, end_line = int(start.get("row", 1)), int(end.get("row", start.get("row", 1)))
    message = found.get("message", "")
    return {
        "line": line, "column": _column(int(start.get("column", 1)), line, shifts),
        "end_line": end_line,
        "end_column": _column(int(end.get("column", start.get("column", 1) + 1)), end_line, shifts),
        "code": code, "message": f"SyntaxError: {message}" if code == "syntax" else message,
        "severity": "warning" if code in WARNINGS else "error",
        "unnecessary": code in UNNECESSARY,
    }


def first_assigned(source: str) -> dict[str, int]:
    """The line of the top-level statement that first binds each name."""
    lines: dict[str, int] = {}
    for name, line in bindings(source):
        lines.setdefault(name, line)
    return lines


def name_of(message: str) -> str | None:
    start, end = message.find("`"), message.rfind("`")
    return message[start + 1:end] if 0 <= start < end else None


def before_assignment(problems: list[dict], source: str) -> list[dict]:
    """ruff's "Undefined name `x`" for a name the code assigns further down says so: run from
    the top, the line fails with a NameError all the same, but the fix is to move it."""
    undefined = [p for p in problems if p["code"] == "F821"]
    if not undefined:
        return problems
    assigned = first_assigned(source)
    for p in undefined:
        name = name_of(p["message"])
        line = assigned.get(name or "")
        if line is not None and line > p["line"]:
            p["code"] = "used-before-assignment"
            p["message"] = f"`{name}` is used before it is assigned (first assigned on line {line})"
    return problems
