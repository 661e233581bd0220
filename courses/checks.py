"""What the web side knows of an assignment's hidden checks without running them: that they
parse, and which checks they declare, read from the source's syntax tree.

The check code calls ``check(name, passed, points=1, message="")`` or uses
``with check(name, points=1): ...`` (``jaxplay.grading``, runner/checklib.py). A call whose name
is a string literal declares that check (``executor.runner.grades.declared_checks``, the one
parser the checker uses too). These give the assignment's ``max_score`` and the checks a
submission did not reach, which count as failed. A check whose name is computed
(``check(f"case {i}", ...)``) is known only once it reports.
"""

from __future__ import annotations

import ast

from executor.runner import grades
from web.errors import ActionError

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


# One parser for both sides: the checker counts what a source declares with the same rule.
declared_checks = grades.declared_checks
max_score = grades.max_score
