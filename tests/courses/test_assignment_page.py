"""The assignment page's device choice: an instructor may pick a kind or a specific device kind
that is online (gpu:h200 under gpu), and the assignment's own device is offered even while no
worker serves it, so that saving the form never changes it by accident."""

from __future__ import annotations

import re

import pytest

from courses.models import Assignment
from executor import registry
from playground.redis import get_redis

pytestmark = pytest.mark.django_db


def device_options(client, assignment) -> list[str]:
    page = client.get(f"/assignments/{assignment.pk}/")
    assert page.status_code == 200
    select = re.search(r'<select id="edit-device".*?</select>', page.content.decode(), re.S)
    assert select, "no device select on the page"
    return re.findall(r'<option value="([^"]+)"', select.group(0))


@pytest.fixture
def h200_online():
    name = "gpu-h200-page-tests@localhost"
    registry.beat(get_redis(), name, "gpu", {"slots": 1, "sandboxed": True, "device_kind": "NVIDIA H200"},
                  specific="h200")
    yield
    registry.leave(get_redis(), name, "gpu", "h200")


def test_an_instructor_is_offered_the_specific_kinds_online(assignment, instructor_client, h200_online):
    assert device_options(instructor_client, assignment) == ["cpu", "gpu", "gpu:h200", "tpu"]


def test_only_the_kinds_are_offered_when_no_specific_kind_is_online(assignment, instructor_client):
    assert device_options(instructor_client, assignment) == ["cpu", "gpu", "tpu"]


def test_the_assignments_own_device_is_offered_while_it_is_offline(assignment, instructor_client):
    Assignment.objects.filter(pk=assignment.pk).update(device="tpu:v5e")
    options = device_options(instructor_client, assignment)
    assert options == ["cpu", "gpu", "tpu", "tpu:v5e"]
    page = instructor_client.get(f"/assignments/{assignment.pk}/").content.decode()
    assert '<option value="tpu:v5e" selected>' in page


def test_a_student_sees_where_it_runs_but_no_settings(assignment, student_client, h200_online):
    Assignment.objects.filter(pk=assignment.pk).update(device="gpu:h200")
    page = student_client.get(f"/assignments/{assignment.pk}/").content.decode()
    assert 'id="edit-device"' not in page
    assert ">GPU:H200<" in page
