"""What the course actions share: the key a person's limits count against, the checks every
request body and every change of a course go through, and the admissions of the runs an action
starts, given back should it fail."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.utils.translation import gettext as _

from playground import quotas
from web.clients import client_key
from web.errors import ActionError

from ..models import Course

TITLE_MAX = 200


def _who(user) -> str:
    """The client key every limit of a signed-in person counts against (``web.clients``)."""
    return client_key(None, user)


def _object(payload) -> dict:
    if not isinstance(payload, dict):
        raise ActionError(_("the request body must be a JSON object"))
    return payload


def _not_archived(course: Course) -> None:
    if course.archived_at is not None:
        raise ActionError(_("this course is archived: it is read-only"), status=409)


@contextmanager
def _given_back_on_failure(*run_ids) -> Iterator[list[str]]:
    """The ids of the runs admitted (``playground.quotas``) for what the block starts: ``run_ids``,
    and each one the block adds. Should the block fail, before or after it made their runs,
    every one is given back (``quotas.release``): their slots and seconds would otherwise stay
    taken until they expire."""
    admitted = [str(run_id) for run_id in run_ids]
    try:
        yield admitted
    except BaseException:
        for run_id in admitted:
            quotas.release(run_id)
        raise


def _instructors_run(by: str | None, run_id, admitted: list[str]) -> int:
    """Admit a graded run an instructor's action queues (a regrade's, a validation's; the budget
    was checked for them all, ``quotas.check_admit_regrade``): its seconds counted against ``by``
    (their client key; None: no one's), its id added to ``admitted`` (``_given_back_on_failure``).
    Returns its priority, the regrade step."""
    if by is None:
        return quotas.REGRADE_STEP
    admitted.append(str(run_id))
    return quotas.admit_regrade(by, str(run_id))
