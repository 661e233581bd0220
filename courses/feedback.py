"""A grade's words in the reader's language. A grade is written once, in English, by whoever
graded it (``executor.runner.grades``, ``courses.grading``), and read later by the student and
their instructors, each in their own language: so what is stored stays English, and the site's
own sentences among it (a check not reached, a run that ended early, a grade that is provisional)
are put into the reader's language here, as the API shows them. Anything else (what a check's
author wrote, a run's own message) is shown as it was written."""

from __future__ import annotations

import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from executor.runner import grades

# How the student's code ended ("Your code ..."), by its run's status (``grades.ENDED``).
_ENDED = {
    "failed": gettext_lazy("raised an exception"),
    "timed_out": gettext_lazy("ran out of time"),
    "limit_exceeded": gettext_lazy("went over a limit"),
    "cancelled": gettext_lazy("was cancelled"),
    "lost": gettext_lazy("was lost (its executor stopped responding)"),
}
ENDED = {grades.ENDED[status]: words for status, words in _ENDED.items() if status in grades.ENDED}

# A run's status in words (``status.replace("_", " ")``, as a grade writes it).
STATUS = {
    "queued": gettext_lazy("queued"), "running": gettext_lazy("running"), "succeeded": gettext_lazy("succeeded"),
    "failed": gettext_lazy("failed"), "timed out": gettext_lazy("timed out"), "cancelled": gettext_lazy("cancelled"),
    "limit exceeded": gettext_lazy("limit exceeded"), "lost": gettext_lazy("lost"),
}

FIXED = {
    grades.CHECK_CRASHED_MESSAGE: gettext_lazy("this check could not run; your instructor has been told"),
    grades.INTERFERED_MESSAGE: gettext_lazy("the submission interfered with grading"),
    f"Not graded: {grades.INTERFERED_MESSAGE}": gettext_lazy("Not graded: the submission interfered with grading"),
    "not reached": gettext_lazy("not reached"),
    "not reached: the checks stopped before it": gettext_lazy("not reached: the checks stopped before it"),
    "Provisional: a check could not run because of a problem in the checks, not in your code; your instructor has "
    "been told and will grade it again": gettext_lazy(
        "Provisional: a check could not run because of a problem in the checks, not in your code; your instructor "
        "has been told and will grade it again"),
    "The checks did not run": gettext_lazy("The checks did not run"),
    "The checks stopped before the end; those not reached count as failed": gettext_lazy(
        "The checks stopped before the end; those not reached count as failed"),
}

_NOT_REACHED = re.compile(r"not reached: your code (?P<ended>.+)")
_YOUR_CODE = re.compile(r"Your code (?P<ended>.+?)(?P<missing>; the checks it did not reach count as failed)?")
_NO_RESULT = re.compile(r"No result: the grading run ended (?P<status>[a-z ]+?)(?: \((?P<reason>.*)\))?; submit again",
                        re.S)


def _ended(words: str) -> str | None:
    """``grades.status_words``' words in the reader's language; None for words it does not know."""
    if words in ENDED:
        return str(ENDED[words])
    status = words.removeprefix("ended ")
    if status != words and status in STATUS:
        return _("ended %(status)s") % {"status": STATUS[status]}
    return None


def _composed(message: str) -> str | None:
    if match := _NOT_REACHED.fullmatch(message):
        ended = _ended(match["ended"])
        return None if ended is None else _("not reached: your code %(ended)s") % {"ended": ended}
    if match := _YOUR_CODE.fullmatch(message):
        ended = _ended(match["ended"])
        if ended is None:
            return None
        if match["missing"]:
            return _("Your code %(ended)s; the checks it did not reach count as failed") % {"ended": ended}
        return _("Your code %(ended)s") % {"ended": ended}
    if match := _NO_RESULT.fullmatch(message):
        status = STATUS.get(match["status"])
        if status is None:
            return None
        if match["reason"] is not None:
            return (_("No result: the grading run ended %(status)s (%(reason)s); submit again")
                    % {"status": status, "reason": match["reason"]})
        return _("No result: the grading run ended %(status)s; submit again") % {"status": status}
    return None


def shown(message):
    """A grade's or a check's message as its reader sees it: the site's own sentence in their
    language, anything else as it was written."""
    if not isinstance(message, str) or not message:
        return message
    fixed = FIXED.get(message)
    if fixed is not None:
        return str(fixed)
    return _composed(message) or message
