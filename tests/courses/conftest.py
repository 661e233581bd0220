"""Three people for every course test: an instructor who teaches "JAX 101", a student who joined
it, and an outsider who did not; the course's assignment with hidden checks (helpers.CHECKS).
API tests need only the database and Redis (database 15); grading end to end needs the live
stack (tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests import people
from tests.people import PASSWORD

from .helpers import CHECKS, STARTER


_plain_static_files = people.plain_static_files
_fast_password_hashes = people.fast_password_hashes
_fresh_rate_limits = people.fresh_rate_limits
client_of = people.client_of


@pytest.fixture
def instructor(django_user_model):
    return django_user_model.objects.create_user("ines", "ines@example.com", PASSWORD)


@pytest.fixture
def student(django_user_model):
    return django_user_model.objects.create_user("sam", "sam@example.com", PASSWORD)


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("otto", "otto@example.com", PASSWORD)


@pytest.fixture
def instructor_client(instructor):
    return client_of(instructor)


@pytest.fixture
def student_client(student):
    return client_of(student)


@pytest.fixture
def outsider_client(outsider):
    return client_of(outsider)


@pytest.fixture
def course(instructor, student):
    from courses.actions.courses import do_create_course
    from courses.actions.members import do_join_course

    course = do_create_course(instructor, "JAX 101")
    do_join_course(course, student)
    return course


@pytest.fixture
def assignment(course):
    from courses.actions.assignments import do_create_assignment

    return do_create_assignment(course, title="Squares", description="Write `square(x)`.", starter_code=STARTER,
                                checks=CHECKS, device="cpu", limits={"wall_s": 20})


@pytest.fixture
def executor_online():
    """A CPU executor's heartbeat, as a worker writes it: submissions and runs are accepted (what
    they queue is sent only on commit, which a test in a rolled-back transaction never reaches)."""
    from executor import registry
    from playground.redis import get_redis

    name = "cpu-courses-tests@localhost"
    registry.beat(get_redis(), name, "cpu", {"slots": 1, "sandboxed": True})
    yield
    registry.leave(get_redis(), name, "cpu")
