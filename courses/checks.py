"""What the web side knows of an assignment's hidden checks without running them: that they
parse, and which checks they declare, read from the source's syntax tree.

The check code calls ``check(name, passed, points=1, message="")`` or uses
``with check(name, points=1): ...`` (see ``jaxplay.grading`` in the runner). A call whose name is
a string literal declares that check, with its points when they are a number literal (positional
third argument of the call form, or ``points=``; 1 otherwise). These give the assignment's
``max_score`` and the checks a submission did not reach (its code ended before them), which count
as failed. A check whose name is computed (``check(f"case {i}", ...)``) is known only once it
reports.
"""

from __future__ import annotations

import ast

from playground.actions.errors import ActionError

CHECKS_MAX_BYTES = 64 * 1024


def validate_checks(source: str) -> None:
    """Raise a 422 naming the line when the checks are not valid Python."""
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > CHECKS_MAX_BYTES:
        raise ActionError(f"the checks are {size} bytes; the limit is {CHECKS_MAX_BYTES} bytes", status=413)
    try:
        ast.parse(source, filename="<checks>")
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        raise ActionError(f"the checks are not valid Python: {exc.msg} ({where})", status=422) from None
    except ValueError as exc:  # NUL bytes
        raise ActionError(f"the checks are not valid Python: {exc}", status=422) from None


def _number(node: ast.AST | None) -> float | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        inner = _number(node.operand)
        if inner is not None:
            return inner if isinstance(node.op, ast.UAdd) else -inner
    return None


def _is_check(call: ast.AST) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    return (isinstance(func, ast.Name) and func.id == "check") or (
        isinstance(func, ast.Attribute) and func.attr == "check")


def _declared(call: ast.Call, *, context_manager: bool) -> dict | None:
    if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
        return None
    points_node = next((k.value for k in call.keywords if k.arg == "points"), None)
    if points_node is None:
        # check(name, passed, points); with check(name, points): the block decides "passed".
        position = 1 if context_manager else 2
        if len(call.args) > position:
            points_node = call.args[position]
    points = 1.0 if points_node is None else _number(points_node)
    if points is None or points < 0:
        points = 1.0 if points_node is None else 0.0
    return {"name": call.args[0].value, "points": points}


def declared_checks(source: str) -> list[dict]:
    """``[{"name", "points"}]`` in source order, each name once (its first declaration). Source
    that does not parse declares nothing."""
    try:
        tree = ast.parse(source or "", filename="<checks>")
    except (SyntaxError, ValueError):
        return []
    in_with: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            in_with.update(id(item.context_expr) for item in node.items)
    found: list[tuple[int, int, dict]] = []
    for node in ast.walk(tree):
        if _is_check(node):
            declared = _declared(node, context_manager=id(node) in in_with)
            if declared is not None:
                found.append((node.lineno, node.col_offset, declared))
    seen: set[str] = set()
    result = []
    for _, _, declared in sorted(found, key=lambda f: (f[0], f[1])):
        if declared["name"] not in seen:
            seen.add(declared["name"])
            result.append(declared)
    return result


def max_score(source: str) -> float:
    return float(sum(c["points"] for c in declared_checks(source)))
