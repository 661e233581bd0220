"""A course's members: joining by its code or its link (and signing up through the link), the
invitations instructors send, roles, removals and the bans they leave. A course always keeps an
instructor, and its creator is never removed or stepped down by someone else."""

from __future__ import annotations

from datetime import timedelta

import redis
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.api import text
from web.errors import ActionError
from web.ratelimit import check_rate, give_back, reserve

from ..access import _id
from ..dashboard import broadcast_on_commit
from ..models import INSTRUCTOR, JOIN_CODE_ALPHABET, ROLES, STUDENT, Ban, Course, Invitation, Membership
from .common import _not_archived, _object, _who

JOINS_PER_HOUR = 30  # join codes have 40 bits; this keeps anyone from trying them in bulk
# Invitations one instructor may send an hour: a class's co-instructors and a few students, not
# a way to try usernames in bulk.
INVITATIONS_PER_HOUR = 60
INVITATION_DAYS = 14
REMOVED = gettext_lazy("you were removed from this course by its instructors; ask one of them to invite you "
                       "again or to let you back in")
# What the limits count, as their refusals name it (``web.ratelimit``).
JOIN_ATTEMPTS = gettext_lazy("attempts to join a course")
JOIN_MISSES = gettext_lazy("join codes that name no course")
INVITATIONS = gettext_lazy("invitations")
SIGN_UPS_THROUGH_LINK = gettext_lazy("sign-ups through this course's join link")


def normalize_join_code(code: str) -> str:
    """As typed from a slide: any case, spaces and dashes ignored."""
    return "".join(c for c in code.upper() if c not in " -\t")


def check_join_course(payload, *, user) -> Membership:
    payload = _object(payload)
    code = text(payload, "code", 64, required=True)
    check_join_rate(user)
    code = normalize_join_code(code)
    if len(code) > 16 or any(c not in JOIN_CODE_ALPHABET for c in code):
        raise ActionError(_("no course has this join code"), status=404)
    course = Course.objects.filter(join_code=code).first()
    if course is None:
        raise ActionError(_("no course has this join code"), status=404)
    existing = Membership.objects.select_related("course").filter(course=course, user=user).first()
    if existing is not None:
        return existing  # joining again changes nothing: instructors stay instructors
    check_not_banned(course, user)
    _not_archived(course)
    return do_join_course(course, user)


def check_join_rate(user) -> None:
    """Joining and looking a join code up count together (the join page shows a code's course)."""
    check_rate("course-joins", _who(user), JOINS_PER_HOUR, 3600, JOIN_ATTEMPTS)


def check_join_link(code: str, *, client: str) -> Course | None:
    """The course a join link names, looked up for someone signed out (``client``: their
    address's key), or None. A link is handed to a whole room, and sixty people behind one
    address open it at once: only codes that name no course count against the address, and once
    it has tried JOINS_PER_HOUR of those this hour it is refused (429), so codes still cannot be
    tried in bulk. Each look-up takes its place among the misses before the code is looked up,
    and a code that names a course gives it back: look-ups in flight together count as they
    arrive, and a burst gets no more tries than the limit."""
    reserved = reserve([("course-join-misses", client, JOINS_PER_HOUR, JOIN_MISSES)], 3600)
    code = normalize_join_code(code)
    course = None
    if code and len(code) <= 16 and all(c in JOIN_CODE_ALPHABET for c in code):
        course = Course.objects.filter(join_code=code).first()
    if course is not None:
        for key in reserved:
            give_back(key)
    return course


def course_of_join_link(code: str, *, client: str) -> Course | None:
    """The course that takes members through the join link of ``code``, for its sign-up page
    (``courses.views.join_signup``), looked up as ``check_join_link`` does; None for a code that
    names no course, an archived course, or an address over its limit of misses (the page opens
    all the same, as any sign-up)."""
    try:
        course = check_join_link(code, client=client)
    except (ActionError, redis.RedisError):
        return None
    return course if course is not None and not course.archived else None


def sign_up_bucket(course: Course) -> tuple[str, int, str]:
    """What a sign-up through the course's join link counts against, instead of the address's own
    sign-ups (``accounts.actions.check_sign_up``): a class signs up there together, often behind one
    address. At most SIGNUP_RATE_LIMIT_PER_COURSE_HOUR an hour through this course's link, from any
    addresses, and as many from one address through any course's."""
    return (f"course:{course.pk}", settings.SIGNUP_RATE_LIMIT_PER_COURSE_HOUR, SIGN_UPS_THROUGH_LINK)


def check_not_banned(course: Course, user) -> None:
    """A removal sticks: someone an instructor removed cannot come back by the join code."""
    if Ban.objects.filter(course=course, user=user).exists():
        raise ActionError(REMOVED, status=403)


def do_join_course(course: Course, user) -> Membership:
    membership, created = Membership.objects.get_or_create(course=course, user=user, defaults={"role": STUDENT})
    if created:
        _broadcast_member(course.pk, user, STUDENT)
    return membership


def _broadcast_member(course_id: int, user, role: str | None) -> None:
    """Dashboards add a new student's row, and close the socket of an instructor who is one no
    more (``role`` None: removed)."""
    broadcast_on_commit(course_id, {"kind": "member", "user": user.pk, "username": user.username, "role": role,
                                     "at": timezone.now().isoformat()})


def check_add_member(acting: Membership, payload) -> dict:
    """An instructor adds someone by username, as a co-instructor (the default) or a student: an
    invitation that makes them a member once they accept it, answered the same whether or not
    anyone has the username (``{"username", "role", "status": "invited", "expires_at"}``), so the
    answer tells no one who has an account. A member's role changes at once instead (members are
    no secret to an instructor): stepping down to student, or, to become an instructor, an
    invitation too. The course's creator is never stepped down by someone else."""
    payload = _object(payload)
    course = acting.course
    _not_archived(course)
    username = text(payload, "username", 150, required=True, strip=True)
    if not username:
        raise ActionError(_("'%(name)s' must not be empty") % {"name": "username"})
    role = payload.get("role", INSTRUCTOR)
    if role not in ROLES:
        raise ActionError(_("'%(name)s' must be one of %(choices)s") % {"name": "role", "choices": ", ".join(ROLES)})
    check_rate("course-invitations", _who(acting.user), INVITATIONS_PER_HOUR, 3600, INVITATIONS)
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    member = None if user is None else Membership.objects.filter(course=course, user=user).first()
    if member is not None and (role == STUDENT or member.role == INSTRUCTOR):
        if member.role != role:
            _check_not_the_creator(acting, member)
        member = do_set_member(course, user, role)
        return {"username": user.username, "role": member.role, "status": "member", "id": user.pk}
    invitation = do_invite(course, username, user, role, by=acting.user)
    return invitation_for_instructors(invitation)


def invitation_for_instructors(invitation: Invitation) -> dict:
    """What instructors see of an invitation: the same for a name no one has."""
    return {"username": invitation.username, "role": invitation.role, "status": "invited",
            "expires_at": invitation.expires_at.isoformat()}


def do_invite(course: Course, username: str, user, role: str, *, by) -> Invitation:
    """Invite ``username`` (``user``: who has it, None for no one); inviting again renews it."""
    invitation, _created = Invitation.objects.update_or_create(course=course, username=username, defaults={
        "user": user, "role": role, "invited_by": by,
        "expires_at": timezone.now() + timedelta(days=INVITATION_DAYS)})
    return invitation


def pending_invitations(user):
    """The invitations ``user`` may still accept, newest first."""
    return (Invitation.objects.filter(user=user, expires_at__gt=timezone.now(), course__archived_at__isnull=True)
            .select_related("course", "invited_by"))


def check_answer_invitation(invitation_id, user, *, accept: bool) -> Membership | None:
    """Accept (a member, with the invitation's role; a removal of theirs is lifted: an instructor
    asked them back) or decline. One's own pending invitations only; any other is "not found"."""
    pk = _id(invitation_id)
    invitation = None if pk is None else pending_invitations(user).filter(pk=pk).first()
    if invitation is None:
        raise ActionError(_("no such invitation of yours (it may have lapsed or been answered)"), status=404)
    if not accept:
        Invitation.objects.filter(pk=invitation.pk).delete()
        return None
    _not_archived(invitation.course)
    return do_accept_invitation(invitation)


def do_accept_invitation(invitation: Invitation) -> Membership:
    with transaction.atomic():
        Ban.objects.filter(course=invitation.course, user=invitation.user).delete()
        existing = Membership.objects.filter(course=invitation.course, user=invitation.user).first()
        role = INSTRUCTOR if existing is not None and existing.role == INSTRUCTOR else invitation.role
        membership = do_set_member(invitation.course, invitation.user, role)
        Invitation.objects.filter(pk=invitation.pk).delete()
    return membership


def do_set_member(course: Course, user, role: str) -> Membership:
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(course=course, user=user).first()
        if membership is None:
            membership = Membership.objects.create(course=course, user=user, role=role)
            _broadcast_member(course.pk, user, role)
            return membership
        if membership.role == INSTRUCTOR and role != INSTRUCTOR:
            _keep_an_instructor(course, membership)
        if membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
            _broadcast_member(course.pk, user, role)
        return membership


def _keep_an_instructor(course: Course, leaving: Membership) -> None:
    others = Membership.objects.filter(course=course, role=INSTRUCTOR).exclude(pk=leaving.pk)
    if not others.exists():
        raise ActionError(_("a course needs an instructor: add another one first"), status=409)


def _check_not_the_creator(acting: Membership, target: Membership) -> None:
    """A co-instructor cannot remove or step down the course's creator (who may leave)."""
    if target.user_id == acting.course.created_by_id and target.user_id != acting.user_id:
        raise ActionError(_("the course's creator cannot be removed or made a student by another instructor"),
                          status=403)


def check_remove_member(acting: Membership, user_id) -> None:
    """An instructor removes a student (or a co-instructor, while another remains, never the
    course's creator), who cannot come back by the join code (a ban, until an instructor lifts
    it); a student may leave (and join again). Whom one may not remove is "not found", like whom
    one may not see."""
    course = acting.course
    target_id = _id(user_id)
    target = None if target_id is None else Membership.objects.filter(course=course, user_id=target_id).first()
    if target is None or (not acting.is_instructor and target.user_id != acting.user_id):
        raise ActionError(_("no such member of this course"), status=404)
    _not_archived(course)
    _check_not_the_creator(acting, target)
    with transaction.atomic():
        if target.role == INSTRUCTOR:
            _keep_an_instructor(course, target)
        do_remove_member(target, banned_by=acting.user if target.user_id != acting.user_id else None)


def do_remove_member(membership: Membership, *, banned_by=None) -> None:
    """Their submissions are kept (an instructor may let them back); they no longer see the
    course, and an open dashboard socket of theirs closes. Removed by someone else (``banned_by``),
    they are banned: the join code no longer lets them in."""
    with transaction.atomic():
        Membership.objects.filter(pk=membership.pk).delete()
        if banned_by is not None:
            Ban.objects.get_or_create(course_id=membership.course_id, user_id=membership.user_id,
                                      defaults={"banned_by": banned_by})
    _broadcast_member(membership.course_id, membership.user, None)


def check_lift_ban(course: Course, user_id) -> None:
    """An instructor lets a removed person back: they may join by the code again."""
    target_id = _id(user_id)
    if target_id is None or not Ban.objects.filter(course=course, user_id=target_id).exists():
        raise ActionError(_("no one removed from this course has this id"), status=404)
    Ban.objects.filter(course=course, user_id=target_id).delete()
