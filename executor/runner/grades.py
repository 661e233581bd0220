"""One grade, decided once: what an assignment's check source declares, how a reported check is
cleaned, and how a graded run's outcome becomes a score. Standard library only: the checker (in
the sandbox), the executor, ``executor.local`` and the web side (``courses``) all import this.

    declared_checks(source)  the checks a source declares with a literal name (and their points)
    check_result(item)       one reported check, cleaned: the one rule for names, points, messages
    grade(...)               the score, the checks a student sees, and what the instructor reads

A check's points are a finite number ≥ 0; anything else (a string, ``True``, NaN, a negative
number) counts 0. A declared check is worth its declared points, whatever a report claims, and
only its first report counts. A check that never reported fails ("not reached"). A run whose
student side interfered with grading (``OUTCOME_INTERFERED``) scores 0, with every check failed
saying so: a forged or garbled grade is never a score.

A check whose own code crashed (``crashed``: the instructor's code raised, not the student's
function) could not run: it fails with CHECK_CRASHED_MESSAGE and the grade ``needs_regrade``: its
score is not final until the checks are fixed and the submission graded again.
"""

from __future__ import annotations

import ast
import math

CHECK_NAME_MAX = 200
CHECK_MESSAGE_MAX = 2000
CHECKS_MAX = 500
POINTS_MAX = 1000.0
ERROR_MAX = 20_000
LOG_MAX = 64 * 1024

# How a graded run ended, from the grade's point of view.
OUTCOME_CHECKED = "checked"  # the checker ran every statement of the checks
OUTCOME_INCOMPLETE = "incomplete"  # the checker stopped early (its time, memory, a crash): what it reported counts
OUTCOME_NOT_RUN = "not_run"  # the checks never ran (the student's code ended the run, or no result came)
OUTCOME_INTERFERED = "interfered"  # the student's side sent what no honest runner sends
OUTCOMES = (OUTCOME_CHECKED, OUTCOME_INCOMPLETE, OUTCOME_NOT_RUN, OUTCOME_INTERFERED)

INTERFERED_MESSAGE = "the submission interfered with grading"
# What a student sees of a check whose own code crashed (runner/checker.py sends it with
# ``crashed``; a check reported failed with exactly these words is one).
CHECK_CRASHED_MESSAGE = "this check could not run; your instructor has been told"

# How the student's code ended, in words ("Your code ...").
ENDED = {"failed": "raised an exception", "timed_out": "ran out of time", "limit_exceeded": "went over a limit",
         "cancelled": "was cancelled", "lost": "was lost (its executor stopped responding)"}


def status_words(status: str | None) -> str:
    return ENDED.get(status or "", f"ended {str(status).replace('_', ' ')}")


def text(value, limit: int) -> str:
    """A string as stored: NUL removed, cut to ``limit`` with an ellipsis; "" for a non-string."""
    if type(value) is not str:
        return ""
    value = value.replace("\x00", "")
    return value if len(value) <= limit else value[: limit - 1] + "…"


def points(value) -> float:
    """The one rule for points: a finite number ≥ 0 (not a bool), at most POINTS_MAX; else 0."""
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        return 0.0
    return float(min(value, POINTS_MAX))


def check_result(item) -> dict | None:
    """One reported check as it is kept: ``{"name", "passed", "points", "message", "crashed"}``;
    None for what is not a check (not a dict, no name). A crashed check never passes, and says
    only CHECK_CRASHED_MESSAGE."""
    if type(item) is not dict:
        return None
    name = text(item.get("name"), CHECK_NAME_MAX).strip()
    if not name:
        return None
    message = text(item.get("message"), CHECK_MESSAGE_MAX)
    crashed = item.get("crashed") is True or (message == CHECK_CRASHED_MESSAGE and item.get("passed") is not True)
    return {"name": name, "passed": item.get("passed") is True and not crashed, "points": points(item.get("points")),
            "message": CHECK_CRASHED_MESSAGE if crashed else message, "crashed": crashed}


# -- what a source declares ---------------------------------------------------------------------


def _number(node) -> float | None:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _number(node.operand)
        if inner is not None:
            return inner if isinstance(node.op, ast.UAdd) else -inner
    return None


def is_check_call(call) -> bool:
    """Whether a syntax tree's node is a call of ``check`` (or of ``<module>.check``)."""
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "check") or (
        isinstance(func, ast.Attribute) and func.attr == "check")


def declared_check(call: ast.Call, *, context_manager: bool = False) -> dict | None:
    """``{"name", "points"}`` of a ``check("literal", ...)`` call; None when the name is computed.
    Points are the call's third positional argument (second of ``with check(name, points)``) or
    ``points=``, when a number literal; 1 when absent; 0 when not a number or negative."""
    if not is_check_call(call) or not call.args or not isinstance(call.args[0], ast.Constant) \
            or type(call.args[0].value) is not str:
        return None
    node = next((k.value for k in call.keywords if k.arg == "points"), None)
    if node is None:
        position = 1 if context_manager else 2
        if len(call.args) > position:
            node = call.args[position]
    return {"name": call.args[0].value, "points": 1.0 if node is None else points(_number(node))}


def check_calls(tree: ast.AST) -> list[tuple[ast.Call, dict | None]]:
    """Every ``check(...)`` call in ``tree`` and what it declares (None: its name is computed)."""
    in_with = {id(item.context_expr) for node in ast.walk(tree) if isinstance(node, (ast.With, ast.AsyncWith))
               for item in node.items}
    return [(node, declared_check(node, context_manager=id(node) in in_with)) for node in ast.walk(tree)
            if is_check_call(node)]


def declared_checks(source: str) -> list[dict]:
    """``[{"name", "points"}]`` in source order, each name once (its first declaration). Source
    that does not parse declares nothing."""
    try:
        tree = ast.parse(source or "", filename="<checks>")
    except (SyntaxError, ValueError):
        return []
    found = [(node.lineno, node.col_offset, declared) for node, declared in check_calls(tree) if declared is not None]
    seen: set[str] = set()
    result = []
    for _, _, declared in sorted(found, key=lambda f: (f[0], f[1])):
        if declared["name"] not in seen:
            seen.add(declared["name"])
            result.append(declared)
    return result


def max_score(source: str) -> float:
    return float(sum(c["points"] for c in declared_checks(source)))


# -- the grade ----------------------------------------------------------------------------------


def grade(reported, declared: list[dict], *, outcome: str, student_status: str | None = None,
          error: str | None = None, log: str = "") -> dict:
    """The grade of one graded run: ``{"score", "max_score", "checks", "message", "error", "log",
    "outcome", "needs_regrade"}``. ``checks`` and ``message`` are what the student sees; ``error``
    and ``log`` the instructor's. ``needs_regrade``: a check crashed, so the score is not final.
    Pure: tests/unit/test_grades.py holds its table."""
    outcome = outcome if outcome in OUTCOMES else OUTCOME_INTERFERED
    declared_points = {d["name"]: points(d.get("points")) for d in declared or []}
    checks, notes = [], []
    seen: set[str] = set()
    for item in (reported if type(reported) is list else [])[:CHECKS_MAX]:
        check = check_result(item)
        if check is None:
            notes.append("a reported check without a name was dropped")
            continue
        if check["name"] in seen:
            notes.append(f"check {check['name']!r} reported more than once: its first report counts")
            continue
        seen.add(check["name"])
        if check["name"] in declared_points:
            check["points"] = declared_points[check["name"]]
        checks.append(check)
    ended = student_status not in (None, "succeeded")
    missing = [d for d in declared or [] if d["name"] not in seen]
    for d in missing:
        if outcome == OUTCOME_NOT_RUN and ended:
            why = f"not reached: your code {status_words(student_status)}"
        elif outcome == OUTCOME_INCOMPLETE:
            why = "not reached: the checks stopped before it"
        else:
            why = "not reached"
        checks.append({"name": d["name"], "passed": False, "points": declared_points[d["name"]], "message": why,
                       "crashed": False})
    message = ""
    crashed = [c["name"] for c in checks if c["crashed"]]
    if outcome == OUTCOME_INTERFERED:
        for check in checks:
            check["passed"], check["message"], check["crashed"] = False, INTERFERED_MESSAGE, False
        crashed = []
        message = f"Not graded: {INTERFERED_MESSAGE}"
        notes.insert(0, f"{INTERFERED_MESSAGE}: the student's side sent messages no honest run sends, so no "
                        "check counts")
    elif crashed:
        message = "Provisional: a check could not run because of a problem in the checks, not in your code; " \
                  "your instructor has been told and will grade it again"
    elif ended:
        message = f"Your code {status_words(student_status)}" + (
            "; the checks it did not reach count as failed" if missing else "")
    elif outcome == OUTCOME_NOT_RUN:
        message = "The checks did not run"
    elif outcome == OUTCOME_INCOMPLETE:
        message = "The checks stopped before the end; those not reached count as failed"
    headline = (f"{len(crashed)} check{'s' if len(crashed) > 1 else ''} could not run because the checks raised "
                f"({', '.join(map(repr, crashed[:20]))}): this grade needs a regrade once they are fixed"
                if crashed else None)
    errors = [e for e in [headline, error if type(error) is str else None, *notes] if e]
    return {
        "score": round(sum(c["points"] for c in checks if c["passed"]), 6),
        "max_score": round(sum(c["points"] for c in checks), 6),
        "checks": checks,
        "message": message,
        "error": text("\n".join(errors), ERROR_MAX),
        "log": text(log, LOG_MAX),
        "outcome": outcome,
        "needs_regrade": bool(crashed),
    }
