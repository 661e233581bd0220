"""Courses: creating one (its creator its first instructor, a join code no other course has)
and archiving it (read-only: every other action refuses to change it)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.api import text
from web.errors import ActionError
from web.ratelimit import check_rate

from ..models import INSTRUCTOR, Course, Membership, new_join_code
from .common import TITLE_MAX, _object, _who

# Far more than a person makes by hand; a script's runaway loop stops here.
COURSES_PER_HOUR = 30
COURSES_CREATED = gettext_lazy("courses created")


def check_create_course(payload, *, user) -> Course:
    payload = _object(payload)
    title = text(payload, "title", TITLE_MAX, required=True, strip=True)
    if not title:
        raise ActionError(_("'%(name)s' must not be empty") % {"name": "title"})
    check_rate("courses", _who(user), COURSES_PER_HOUR, 3600, COURSES_CREATED)
    return do_create_course(user, title)


def do_create_course(user, title: str) -> Course:
    """A new course, taught by ``user``, with a join code no other course has."""
    for _attempt in range(10):
        try:
            with transaction.atomic():
                course = Course.objects.create(title=title, created_by=user, join_code=new_join_code())
                Membership.objects.create(course=course, user=user, role=INSTRUCTOR)
                return course
        except IntegrityError:  # the code is taken (1 in 10^12 per course): draw another
            continue
    raise ActionError(_("could not find a free join code"), status=500)


def check_archive_course(course: Course, payload) -> Course:
    payload = {} if payload is None else _object(payload)
    archived = payload.get("archived", True)
    if not isinstance(archived, bool):
        raise ActionError(_("'%(name)s' must be true or false") % {"name": "archived"})
    return do_archive_course(course, archived)


def do_archive_course(course: Course, archived: bool = True) -> Course:
    if archived and course.archived_at is None:
        course.archived_at = timezone.now()
    elif not archived:
        course.archived_at = None
    Course.objects.filter(pk=course.pk).update(archived_at=course.archived_at)
    return course
