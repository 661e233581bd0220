"""A snippet's exception as the run shows it: its type, message, the snippet's line and a
traceback of the snippet's own frames, walked in bounded memory (``describe_exception``); and the
snippet's line where an exception was raised (``last_user_line``), which a graded run's student
side also says of its errors (runner/answers.py).

Walked here rather than by ``traceback``'s own walk: in a graded run only the runner's code may
reach frames, and a recursion that filled the run's memory leaves millions of them.
"""

from __future__ import annotations

import os
import traceback
from collections import deque

from .common import RUNNER_DIR, SNIPPET_FILENAME

# A traceback keeps this many of the user's outermost frames and as many innermost; the ones
# between are counted. A recursion that filled the run's memory leaves millions of frames, and a
# list of them all would need more memory than the run has left.
TRACEBACK_KEPT = 25
_RUNNER_FILES = RUNNER_DIR + os.sep


class _Frames:
    """A traceback walked once, in bounded memory: the user's frames kept at both ends, the
    user's frames between them counted, library frames between counted (the runner's own, exec
    and magics, are not)."""

    def __init__(self, tb):
        self.head: list[traceback.FrameSummary] = []
        self.tail: deque[traceback.FrameSummary] = deque(maxlen=TRACEBACK_KEPT)
        self.user = self.hidden = 0
        while tb is not None:
            code = tb.tb_frame.f_code
            if code.co_filename == SNIPPET_FILENAME:
                self.user += 1
                frame = traceback.FrameSummary(SNIPPET_FILENAME, tb.tb_lineno, code.co_name)
                (self.head if len(self.head) < TRACEBACK_KEPT else self.tail).append(frame)
            elif not code.co_filename.startswith(_RUNNER_FILES):
                self.hidden += 1
            tb = tb.tb_next

    @property
    def last_line(self) -> int | None:
        last = self.tail[-1] if self.tail else self.head[-1] if self.head else None
        return last.lineno if last else None

    def format(self) -> list[str]:
        lines = traceback.format_list(self.head)
        if (between := self.user - len(self.head) - len(self.tail)) > 0:
            lines.append(f"  [{between:,} more call{'s' if between != 1 else ''} of the snippet's own]\n")
        lines += traceback.format_list(list(self.tail))
        return lines


def last_user_line(tb) -> int | None:
    """The snippet's line where an exception was raised (its innermost frame of the snippet)."""
    line = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SNIPPET_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def describe_exception(exc: BaseException) -> dict:
    """The error event for an exception raised by the snippet: its type, message, the user's
    line and a traceback trimmed to the user's own frames."""
    if isinstance(exc, SyntaxError) and exc.filename == SNIPPET_FILENAME:
        text = "".join(traceback.format_exception_only(type(exc), exc))
        return {
            "exc_type": type(exc).__name__,
            "message": exc.msg,
            "line": exc.lineno,
            "traceback": text,
        }
    frames = _Frames(exc.__traceback__)
    lines = ["Traceback (most recent call last):\n"]
    lines += frames.format()
    if frames.hidden > 0:
        lines.append(f"  [{frames.hidden} frame{'s' if frames.hidden != 1 else ''} inside libraries hidden]\n")
    lines += traceback.format_exception_only(type(exc), exc)
    return {
        "exc_type": type(exc).__name__,
        "message": str(exc),
        "line": frames.last_line,
        "traceback": "".join(lines),
    }
