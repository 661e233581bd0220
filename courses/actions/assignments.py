"""Assignments: their fields as a request gives them (the due time, the limits an assignment may
narrow, its hidden checks), creating and changing one, and validating it: its reference solution
and starter code graded with its checks whenever what is graded changes."""

from __future__ import annotations

import math
import uuid
from datetime import UTC

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from executor import registry
from playground import quotas
from playground.devices import check_device, check_online
from playground.runtimes import check_runtime
from playground.runtimes import current as current_runtime
from web.api import text
from web.errors import ActionError

from .. import checks as checks_source
from ..grading import queue_validation
from ..models import REFERENCE, STARTER, Assignment, Course, Grading
from .common import TITLE_MAX, _given_back_on_failure, _instructors_run, _not_archived, _object, _who

DESCRIPTION_MAX = 20_000


def _parse_due(value):
    if value is None:
        return None
    if not isinstance(value, str):
        raise ActionError(_("'%(name)s' must be a date and time in ISO 8601 (2026-03-01T23:59:00Z) or null")
                          % {"name": "due"})
    try:
        parsed = parse_datetime(value.strip())
    except ValueError:
        parsed = None
    if parsed is None:
        raise ActionError(_("'%(name)s' is not a date and time in ISO 8601 (2026-03-01T23:59:00Z): %(value)s")
                          % {"name": "due", "value": repr(value)})
    if timezone.is_naive(parsed):
        parsed = parsed.replace(tzinfo=UTC)  # without an offset, a time is UTC (the API's clock)
    return parsed


def _parse_limits(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ActionError(_("'%(name)s' must be an object with any of %(limits)s")
                          % {"name": "limits", "limits": ", ".join(settings.RUN_LIMITS)})
    limits = {}
    for key, number in value.items():
        if key not in settings.RUN_LIMITS:
            raise ActionError(_("unknown limit %(limit)s; an assignment may narrow %(limits)s")
                              % {"limit": repr(key), "limits": ", ".join(settings.RUN_LIMITS)})
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number) or number <= 0:
            raise ActionError(_("limit %(limit)s must be a positive number") % {"limit": repr(key)})
        if number > settings.RUN_LIMITS[key]:
            raise ActionError(_("limit %(limit)s may be at most %(max)s (the playground's own); an assignment can "
                                "only narrow limits") % {"limit": repr(key), "max": settings.RUN_LIMITS[key]})
        limits[key] = number
    return limits


def _assignment_fields(payload: dict, *, creating: bool) -> dict:
    fields: dict = {}
    title = text(payload, "title", TITLE_MAX, required=creating, strip=True)
    if title is not None:
        if not title:
            raise ActionError(_("'%(name)s' must not be empty") % {"name": "title"})
        fields["title"] = title
    for name, limit in (("description", DESCRIPTION_MAX), ("starter_code", settings.RUN_MAX_CODE_BYTES),
                        ("reference_solution", settings.RUN_MAX_CODE_BYTES),
                        ("checks", checks_source.CHECKS_MAX_BYTES)):
        # A long field over its limit is a body too large (413); a short one, bad input.
        value = text(payload, name, limit, status=413 if limit > 1000 else 400)
        if value is not None:
            fields[name] = value
    if "checks" in fields:
        checks_source.validate_checks(fields["checks"])
    if "device" in payload:
        fields["device"] = check_device(payload["device"])
    if "runtime" in payload or creating:
        fields["runtime"] = check_runtime(payload.get("runtime"))[0]
    if "due" in payload:
        fields["due_at"] = _parse_due(payload["due"])
    if "results_before_due" in payload:
        if not isinstance(payload["results_before_due"], bool):
            raise ActionError(_("'%(name)s' must be true or false") % {"name": "results_before_due"})
        fields["results_before_due"] = payload["results_before_due"]
    if "limits" in payload:
        fields["limits"] = _parse_limits(payload["limits"])
    return fields


# What a validation grades: a change to any of these makes the last one out of date.
VALIDATED_FIELDS = ("checks", "reference_solution", "starter_code", "device", "runtime", "limits")


def check_create_assignment(course: Course, payload, *, user=None) -> Assignment:
    """A new assignment, validated (``check_validate_assignment``) as ``user`` (its instructor)."""
    payload = _object(payload)
    _not_archived(course)
    fields = _assignment_fields(payload, creating=True)
    fields.setdefault("device", settings.RUN_DEFAULT_DEVICE)
    assignment = do_create_assignment(course, **fields)
    check_validate_assignment(assignment, user=user)
    return assignment


def do_create_assignment(course: Course, **fields) -> Assignment:
    fields["max_score"] = checks_source.max_score(fields.get("checks", ""))
    assignment = Assignment.objects.create(course=course, **fields)
    return assignment


def check_update_assignment(assignment: Assignment, payload, *, user=None) -> Assignment:
    """A change, validated again when it changes what is graded (``VALIDATED_FIELDS``)."""
    payload = _object(payload)
    _not_archived(assignment.course)
    fields = _assignment_fields(payload, creating=False)
    revalidate = any(name in VALIDATED_FIELDS and getattr(assignment, name) != value for name, value in fields.items())
    assignment = do_update_assignment(assignment, fields)
    if revalidate:
        check_validate_assignment(assignment, user=user)
    return assignment


def do_update_assignment(assignment: Assignment, fields: dict) -> Assignment:
    """Changed checks get a new version (submissions graded before can be regraded) and a new
    max_score; grades already given stay as they are until a regrade."""
    changed = [name for name, value in fields.items() if getattr(assignment, name) != value]
    for name in changed:
        setattr(assignment, name, fields[name])
    if "checks" in changed:
        assignment.checks_version += 1
        assignment.max_score = checks_source.max_score(assignment.checks)
        changed += ["checks_version", "max_score"]
    if changed:
        assignment.save(update_fields=[*changed, "updated_at"])
    return assignment


def check_validate_assignment(assignment: Assignment, *, user=None) -> None:
    """Grade the reference solution and the starter code with the checks, as nbgrader's validate
    does: the reference should get full marks, the starter code should not. Two graded runs like a
    submission's, which are the instructor's (``user``) as a regrade's are: their seconds count
    against the instructor's budget and they are queued below every run a person waits for. When
    they are refused (the budget, a full queue, no executor online), the save still stands and the
    assignment says why it was not validated. Without checks, or with neither code, there is
    nothing to validate."""
    runs = [(kind, code) for kind, code in ((REFERENCE, assignment.reference_solution),
                                            (STARTER, assignment.starter_code)) if code.strip()]
    if not assignment.checks.strip() or not runs:
        do_validate_assignment(assignment, [])
        return
    who = _who(user) if user is not None else None
    runtime = current_runtime(assignment.runtime)
    try:
        check_online(assignment.device, runtime)
        if who is not None:
            quotas.check_admit_regrade(who, registry.route(assignment.device, runtime), len(runs))
    except ActionError as exc:
        do_validate_assignment(assignment, [], skipped=exc.message)
        return
    do_validate_assignment(assignment, runs, by=who)


def do_validate_assignment(assignment: Assignment, runs: list[tuple[str, str]], *, by: str | None = None,
                           skipped: str = "") -> None:
    """Replace the assignment's validation with a graded run of each ``(kind, code)`` (none: no
    validation, ``skipped`` saying why); ``by``: the client key their seconds count against. A
    run of the replaced validation still going ends as any run; its result is dropped."""
    with _given_back_on_failure() as admitted, transaction.atomic():
        Grading.objects.filter(assignment=assignment).delete()
        for kind, code in runs:
            run_id = uuid.uuid4()
            queue_validation(assignment, kind, code, run_id=run_id, priority=_instructors_run(by, run_id, admitted))
        if assignment.validation_skipped != skipped:
            assignment.validation_skipped = skipped
            Assignment.objects.filter(pk=assignment.pk).update(validation_skipped=skipped)
