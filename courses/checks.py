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

from django.utils.translation import gettext as _

from executor.runner import grades
from web.errors import ActionError

CHECKS_MAX_BYTES = 64 * 1024


def validate_checks(source: str) -> None:
    """Raise a 422 naming the line when the checks are not valid Python."""
    size = len(source.encode("utf-8", errors="surrogatepass"))
    if size > CHECKS_MAX_BYTES:
        raise ActionError(_("the checks are %(size)s bytes; the limit is %(limit)s bytes")
                          % {"size": size, "limit": CHECKS_MAX_BYTES}, status=413)
    try:
        ast.parse(source, filename="<checks>")
    except SyntaxError as exc:
        # The assignment page finds the line in these words ("line 3", "第 3 行") to mark it.
        if exc.offset:
            where = _("line %(line)s, column %(column)s") % {"line": exc.lineno, "column": exc.offset}
        else:
            where = _("line %(line)s") % {"line": exc.lineno}
        raise ActionError(_("the checks are not valid Python: %(reason)s (%(where)s)")
                          % {"reason": exc.msg, "where": where}, status=422) from None
    except ValueError as exc:  # NUL bytes
        raise ActionError(_("the checks are not valid Python: %(reason)s") % {"reason": exc}, status=422) from None


# One parser for both sides: the checker counts what a source declares with the same rule.
declared_checks = grades.declared_checks
max_score = grades.max_score
