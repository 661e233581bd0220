"""Grading end to end on the live stack (tests/conftest.py: daphne, the recorder, a sandboxed CPU
executor): submissions are graded by the hidden checks in the sandbox, and whatever a submission
does, its score is what its own code earns and the checks never reach the student.

    test ── Django test client (this process) ──▶ the database, Redis (the same the stack uses)
                                                   │ exec.cpu
                                                   ▼
                     executor (subprocess) ── sandboxed runner: student code, then the checks
                                                   │ recorder.record_events, recorder.record_grade
                                                   ▼
                     recorder (subprocess) ──▶ the database, the course's group (channel layer)
"""

from __future__ import annotations

import csv
import io
import json
import time

import pytest
from django.test import Client

from bench.stack import recorded_to_the_end
from courses.actions.assignments import do_create_assignment
from courses.actions.members import do_join_course
from courses.models import Submission
from playground.models import Run, RunEvent

from .conftest import client_of
from .helpers import CHECKS, CORRECT, MARKER, WRONG, bearer, make_token, patch, post

GRADED_WITHIN_S = 120


def submit(client: Client, assignment, code: str) -> int:
    response = post(client, f"/api/assignments/{assignment.pk}/submissions", {"code": code})
    assert response.status_code == 201, response.content
    return response.json()["id"]


def wait_graded(*submission_ids: int, timeout: float = GRADED_WITHIN_S) -> dict[int, Submission]:
    deadline = time.monotonic() + timeout
    while True:
        found = {s.pk: s for s in Submission.objects.filter(pk__in=submission_ids, status="graded")}
        if len(found) == len(submission_ids):
            return found
        if time.monotonic() > deadline:
            stuck = Submission.objects.filter(pk__in=submission_ids).exclude(status="graded")
            raise TimeoutError(f"not graded after {timeout} s: {[(s.pk, s.status) for s in stuck]}")
        time.sleep(0.2)


def wait_recorded(run_id, timeout: float = 30) -> None:
    """Until the run has ended and its events 1..N, the last its end, are all stored."""
    deadline = time.monotonic() + timeout
    while True:
        run = Run.objects.filter(pk=run_id).values("status").first() or {}
        run["events"] = list(RunEvent.objects.filter(run_id=run_id).order_by("seq").values("seq", "type"))
        if recorded_to_the_end(run):
            return
        assert time.monotonic() < deadline, f"run {run_id} not all recorded after {timeout} s: {run}"
        time.sleep(0.1)


def student_view(client: Client, submission_id: int) -> dict:
    response = client.get(f"/api/submissions/{submission_id}")
    assert response.status_code == 200
    return response.json()


def run_as_student(client: Client, run_id: str, timeout: float = 60) -> dict:
    """A submission's run once it ended, read as its student reads it (a submission's run is its
    student's and the course's instructors' alone: anyone else's read is a 404)."""
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/runs/{run_id}")
        assert response.status_code == 200, response.status_code
        run = response.json()
        if run["status"] not in ("queued", "running") or time.monotonic() > deadline:
            return run
        time.sleep(0.2)


def assert_nothing_leaked(client: Client, submission_id: int) -> None:
    """What the student can get of a submission: its API answer and its grading run's events."""
    run_id = Submission.objects.get(pk=submission_id).run_id
    wait_recorded(run_id)  # the grade may land before the run's last events: read them all
    seen = client.get(f"/api/submissions/{submission_id}").content.decode()
    seen += client.get(f"/api/runs/{run_id}").content.decode()
    seen += json.dumps([e.data for e in RunEvent.objects.filter(run_id=run_id)])
    # (Not the checks' variable names: a hostile submission's own code names what it looks for.)
    for secret in (MARKER, "checks saw", "allclose(square(3.0)"):
        assert secret not in seen, secret


@pytest.fixture
def class_of(course, django_user_model):
    """``class_of(n)``: n more students in the course, each with a signed-in client."""

    def make(n: int, prefix: str = "student") -> list[tuple]:
        people = []
        for i in range(n):
            user = django_user_model.objects.create_user(f"{prefix}{i:03d}", f"{prefix}{i}@example.com", "x")
            do_join_course(course, user)
            people.append((user, client_of(user)))
        return people

    return make


# What a submission earns --------------------------------------------------------------------------

def test_a_correct_submission_gets_every_point(live_stack, assignment, student_client):
    submission_id = submit(student_client, assignment, CORRECT)
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert (body["status"], body["score"], body["max_score"]) == ("graded", 5.0, 5.0)
    assert [(c["name"], c["passed"]) for c in body["checks"]] == [("square of 3", True), ("keeps the shape", True)]
    assert_nothing_leaked(student_client, submission_id)


def test_the_instructor_reads_what_the_checks_printed(live_stack, assignment, student_client, instructor_client):
    submission_id = submit(student_client, assignment, CORRECT)
    wait_graded(submission_id)
    body = instructor_client.get(f"/api/submissions/{submission_id}").json()
    assert f"checks saw {MARKER}" in body["log"] and not body["error"]


def test_a_wrong_submission_gets_the_points_of_the_checks_it_passes(live_stack, assignment, student_client):
    submission_id = submit(student_client, assignment, WRONG)
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert (body["score"], body["max_score"]) == (3.0, 5.0)
    assert body["checks"][0]["passed"] is False and "differ" in body["checks"][0]["message"]


def test_a_crashing_submission_is_graded_with_its_score(live_stack, assignment, student_client):
    submission_id = submit(student_client, assignment, "def square(x):\n    return x * x\nraise ValueError('oops')\n")
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    # The checks run after the code, in its globals, whatever the code did: square is defined.
    assert body["status"] == "graded" and body["score"] == 5.0
    # The grade is recorded before the run's end (the executor sends it first).
    assert run_as_student(student_client, body["run"])["status"] == "failed"


def test_a_submission_that_crashes_before_defining_anything_scores_zero(live_stack, assignment, student_client):
    submission_id = submit(student_client, assignment, "1 / 0\ndef square(x):\n    return x * x\n")
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert (body["status"], body["score"], body["max_score"]) == ("graded", 0.0, 5.0)
    assert all(not c["passed"] for c in body["checks"]) and len(body["checks"]) == 2
    assert_nothing_leaked(student_client, submission_id)


def test_a_slow_submission_is_graded_once_its_time_is_up(live_stack, course, student_client):
    slow = do_create_assignment(course, title="Quick", checks=CHECKS, limits={"wall_s": 3})
    submission_id = submit(student_client, slow, CORRECT + "import time\ntime.sleep(60)\n")
    started = time.monotonic()
    wait_graded(submission_id, timeout=60)
    assert time.monotonic() - started < 30
    body = student_view(student_client, submission_id)
    assert (body["status"], body["score"], body["max_score"]) == ("graded", 0.0, 5.0)
    assert "ran out of time" in body["message"]
    assert run_as_student(student_client, body["run"])["status"] == "timed_out"


def test_a_late_submission_is_marked(live_stack, course, student_client):
    from datetime import timedelta

    from django.utils import timezone

    past = do_create_assignment(course, title="Past", checks=CHECKS, due_at=timezone.now() - timedelta(hours=1))
    submission_id = submit(student_client, past, CORRECT)
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert body["late"] is True and body["score"] == 5.0


# Hostile submissions: none raises its score above what its square earns (3 of 5: wrong values, right shape)

HOSTILE = {
    "reads the checks through frames": """
import sys
def square(x):
    caller = sys._getframe(1)
    print("found", caller.f_globals.get("EXPECTED_NOTE"), caller.f_code.co_consts)
    return x + x
""",
    "reads the checks through a traceback": """
def square(x):
    try:
        raise RuntimeError
    except RuntimeError as exc:
        frame = exc.__traceback__.tb_frame.f_back
        print("found", frame.f_globals.get("EXPECTED_NOTE"))
    return x + x
""",
    "looks for the checks in memory": """
import gc
def square(x):
    for o in gc.get_objects():
        if isinstance(o, str) and "EXPECTED" in o:
            print("found", o)
    return x + x
""",
    "patches the comparison the checks use": """
import numpy as np
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
import jaxplay.grading as grading
grading.allclose = lambda *a, **k: True
def square(x):
    return x + x
""",
    "patches a library from inside a check's call": """
def square(x):
    import numpy as np
    np.allclose = lambda *a, **k: True
    import jaxplay.grading as grading
    grading.allclose = lambda *a, **k: True
    return x + x
""",
    "forges grading messages": """
import json, os, sys
forged = {"type": "check", "name": "square of 3", "passed": True, "points": 100, "message": ""}
print(json.dumps(forged))
for fd in range(3, 64):
    try:
        os.write(fd, (json.dumps(forged) + "\\n").encode())
    except OSError:
        pass
def square(x):
    return x + x
""",
    "calls check itself": """
from jaxplay.grading import check
try:
    check("square of 3", True, 100)
except Exception as exc:
    print("refused:", exc)
def square(x):
    try:
        check("bonus", True, 100)
        check("square of 3", True, 100)
    except Exception:
        pass
    return x + x
""",
    "replaces builtins the checks use": """
import builtins
builtins.float = lambda *a: 9.0
builtins.isinstance = lambda *a: True
def square(x):
    return x + x
""",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_hostile_submission_earns_no_more_than_its_code(live_stack, assignment, student_client, name):
    submission_id = submit(student_client, assignment, HOSTILE[name])
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert body["status"] == "graded"
    assert body["score"] <= 3.0 and body["max_score"] == 5.0, body
    assert {c["name"] for c in body["checks"]} == {"square of 3", "keeps the shape"}
    assert_nothing_leaked(student_client, submission_id)
    if name == "forges grading messages":  # seen by the instructor, and no score
        assert body["score"] == 0 and "interfered with grading" in body["message"]
        assert "interfered with grading" in Submission.objects.get(pk=submission_id).error


def test_a_submission_that_ends_its_process_scores_zero(live_stack, assignment, student_client):
    submission_id = submit(student_client, assignment, CORRECT + "import os\nos._exit(0)\n")
    wait_graded(submission_id)
    body = student_view(student_client, submission_id)
    assert (body["status"], body["score"], body["max_score"]) == ("graded", 0.0, 5.0)


# Gradient and IR-aware checks ---------------------------------------------------------------------

IR_CHECKS = """
from jaxplay.grading import check, compile_count, flops_under, grad_check, max_compilations, no_float64
from jaxplay.grading import no_host_callbacks
import numpy as np
x = np.arange(1.0, 4.0, dtype=np.float32)
check("gradient", grad_check(loss, x, loss_grad), 2)
check("no float64", no_float64(loss, x))
check("compiled once", max_compilations(scale, 1, (x, 2.0), (x, 3.0)))
check("under a FLOP budget", flops_under(1e6, loss, x))
check("no host callbacks", no_host_callbacks(loss, x))
check("compiled at all", compile_count(loss, (x,)) >= 1)
"""
IR_GOOD = """
import jax, jax.numpy as jnp
@jax.jit
def loss(w):
    return jnp.sum(jnp.sin(w) * w)
loss_grad = jax.grad(loss)
scale = jax.jit(lambda w, s: w * s)
print(loss(jnp.arange(1.0, 4.0)))
"""
IR_BAD = """
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
@jax.jit
def loss(w):
    jax.debug.print("w = {}", w)
    m = jnp.outer(w, w) @ jnp.ones((w.shape[0], 512)) @ jnp.ones((512, 512))
    return jnp.sum(jnp.sin(w) * w) + 0 * jnp.sum(m)
def loss_grad(w):
    return jnp.cos(w)  # wrong
scale = jax.jit(lambda w, s: w * s, static_argnums=1)  # compiled again for every s
for n in (3, 4, 5):
    loss(jnp.arange(1.0, n + 1.0, dtype=jnp.float64))
"""


def test_gradient_and_compilation_checks(live_stack, course, student_client):
    ir = do_create_assignment(course, title="Compiled", checks=IR_CHECKS)
    good, bad = submit(student_client, ir, IR_GOOD), submit(student_client, ir, IR_BAD)
    graded = wait_graded(good, bad)
    assert {c["name"]: c["passed"] for c in graded[good].checks} == {
        "gradient": True, "no float64": True, "compiled once": True, "under a FLOP budget": True,
        "no host callbacks": True, "compiled at all": True}, graded[good].checks
    assert graded[good].score == 7.0
    assert {c["name"]: c["passed"] for c in graded[bad].checks} == {
        "gradient": False, "no float64": False, "compiled once": False, "under a FLOP budget": False,
        "no host callbacks": False, "compiled at all": True}, graded[bad].checks
    assert graded[bad].score == 1.0


# At scale: parallel grading, regrade, grades, the live dashboard ---------------------------------

def test_fifty_submissions_are_graded_in_parallel_by_two_workers(live_stack, assignment, class_of):
    live_stack.start_executor("executor2")
    try:
        deadline = time.monotonic() + 90
        while live_stack.get("/api/devices")["devices"][0]["workers"] < 2:
            assert time.monotonic() < deadline, "the second executor did not come online"
            time.sleep(0.2)
        people = class_of(25)
        started = time.monotonic()
        expected = {}
        for i, (_, client) in enumerate(people * 2):
            code = CORRECT if i % 2 == 0 else WRONG
            expected[submit(client, assignment, code)] = 5.0 if code == CORRECT else 3.0
        graded = wait_graded(*expected, timeout=240)
        elapsed = time.monotonic() - started
        assert {pk: s.score for pk, s in graded.items()} == expected
        # A grade is sent before its run's last events, and another recorder may store it first:
        # the runs (and the workers they name) are read once all of them are recorded as ended.
        runs = Run.objects.filter(pk__in=[s.run_id for s in graded.values()])
        for run_id in runs.values_list("pk", flat=True):
            wait_recorded(run_id)
        workers = set(runs.values_list("worker", flat=True))
        assert len(workers) == 2, workers
        print(f"50 submissions graded in {elapsed:.1f} s by {sorted(workers)}")
    finally:
        live_stack.kill("executor2")


def test_a_regrade_keeps_grades_until_the_new_ones_land(live_stack, assignment, instructor_client, class_of):
    people = class_of(4, "regraded")
    first = {submit(client, assignment, CORRECT if i % 2 else WRONG): user for i, (user, client) in enumerate(people)}
    wait_graded(*first)
    before = {pk: s.score for pk, s in wait_graded(*first).items()}
    # The checks change: a new check, worth 10, that only the correct square passes.
    new_checks = CHECKS + '\ncheck("square of -2", allclose(square(-2.0), 4.0), 10)\n'
    assert patch(instructor_client, f"/api/assignments/{assignment.pk}", {"checks": new_checks}).status_code == 200
    response = post(instructor_client, f"/api/assignments/{assignment.pk}/regrade")
    assert response.status_code == 202 and response.json()["queued"] == 4
    # Until each new grade lands, the earlier one stands.
    for s in Submission.objects.filter(pk__in=first):
        assert s.status == "graded" and (s.regrading or s.max_score == 15.0)
        assert s.score in (before[s.pk], 15.0, 3.0)
    deadline = time.monotonic() + GRADED_WITHIN_S
    while True:
        progress = instructor_client.get(f"/api/assignments/{assignment.pk}").json()["regrade"]
        if progress["done"] == progress["queued"] == 4:
            break
        assert time.monotonic() < deadline, progress
        time.sleep(0.2)
    after = {s.pk: (s.score, s.max_score, s.regrading) for s in Submission.objects.filter(pk__in=first)}
    assert sorted(after.values()) == [(3.0, 15.0, False)] * 2 + [(15.0, 15.0, False)] * 2


def test_grades_export_as_csv(live_stack, course, assignment, instructor_client, class_of):
    people = class_of(3, "csv")
    ids = [submit(people[0][1], assignment, CORRECT), submit(people[1][1], assignment, WRONG)]
    wait_graded(*ids)
    rows = list(csv.reader(io.StringIO(instructor_client.get(f"/api/courses/{course.pk}/grades.csv").content
                                       .decode())))
    assert rows[0] == ["username", "name", "email", "Squares (latest graded, of 5)", "total (of 5)"]
    sam = Submission._meta.get_field("student").related_model.objects.get(username="sam")
    assert rows[1:] == [["csv000", "", "csv0@example.com", "5", "5"], ["csv001", "", "csv1@example.com", "3", "3"],
                        ["csv002", "", "csv2@example.com", "", "0"], ["sam", sam.get_full_name(), sam.email, "", "0"]]


def test_the_dashboard_shows_a_submission_live(live_stack, course, assignment, instructor, student_client):
    from websockets.sync.client import connect

    secret = make_token(instructor)
    with connect(f"{live_stack.ws_url}/ws/courses/{course.pk}/", additional_headers=bearer_header(secret),
                 open_timeout=10) as ws:
        snap = json.loads(ws.recv(timeout=10))
        assert snap["type"] == "snapshot"
        submitted_at = time.monotonic()
        submission_id = submit(student_client, assignment, CORRECT)
        statuses = []
        deadline = time.monotonic() + GRADED_WITHIN_S
        while "graded" not in statuses:
            message = json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.1)))
            assert message["type"] == "update"
            item = message["item"]
            assert MARKER not in json.dumps(item)
            if item["kind"] == "submission" and item["submission"] == submission_id:
                statuses.append(item["status"])
        assert statuses[0] == "queued" and statuses[-1] == "graded" and item["score"] == 5.0
        print(f"submission to graded on the dashboard: {time.monotonic() - submitted_at:.2f} s")


def test_a_student_cannot_open_the_dashboard_of_the_live_stack(live_stack, course, student):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    with connect(f"{live_stack.ws_url}/ws/courses/{course.pk}/",
                 additional_headers=bearer_header(make_token(student)), open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=10)
    assert closed.value.rcvd.code == 4404


def test_a_submissions_run_socket_is_closed_4404_to_all_but_its_student_and_instructors(
        live_stack, course, assignment, student, instructor, outsider, student_client, django_user_model):
    """``/ws/runs/<id>/`` of a submission's run keeps the rules of ``GET /api/runs/<id>``
    (playground/access.py's guard): a classmate and an outsider signed in on the page, a script
    signed out and a forged browser cookie are closed with 4404 before anything is sent, as for a
    run that does not exist; the student and the course's instructors, signed in or with their API
    tokens, follow it."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    classmate = django_user_model.objects.create_user("cleo", "cleo@example.com", "x")
    do_join_course(course, classmate)
    submission = Submission.objects.get(pk=submit(student_client, assignment, WRONG))
    path = f"{live_stack.ws_url}/ws/runs/{submission.run_id}/"

    def signed_in(user) -> dict:
        return {"Cookie": f"sessionid={client_of(user).cookies['sessionid'].value}"}

    strangers = {
        "a classmate": signed_in(classmate),
        "an outsider": signed_in(outsider),
        "signed out": {},
        "a forged browser cookie": {"Cookie": "browser=forged:signature"},
    }
    for who, headers in strangers.items():
        with connect(path, additional_headers=headers, open_timeout=10) as ws:
            with pytest.raises(ConnectionClosed) as closed:
                message = ws.recv(timeout=30)
                raise AssertionError(f"{who} was sent {message[:200]}")
        assert closed.value.rcvd.code == 4404, who
    # A script holding the student's or an instructor's API token, no cookie, follows it as they
    # do on the page (the submission's answer names this socket); one whose token is not valid is
    # told so with 4401, as the API answers 401.
    followers = {"the student": signed_in(student), "the instructor": signed_in(instructor),
                 "the student's script": bearer_header(make_token(student)),
                 "the instructor's script": bearer_header(make_token(instructor))}
    for who, headers in followers.items():
        with connect(path, additional_headers=headers, open_timeout=10) as ws:
            first = json.loads(ws.recv(timeout=30))
        assert first.get("seq") == 1, (who, first)
    with connect(path, additional_headers=bearer_header("jpg_" + "x" * 43), open_timeout=10) as ws:
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=30)
    assert closed.value.rcvd.code == 4401 and "token is not valid" in closed.value.rcvd.reason
    wait_graded(submission.pk)


def bearer_header(secret: str) -> dict:
    return {"Authorization": bearer(secret)["HTTP_AUTHORIZATION"]}


def test_a_script_submits_with_a_token_and_reads_its_grade(live_stack, assignment, student):
    script = Client(**bearer(make_token(student)))
    submission_id = submit(script, assignment, CORRECT)
    wait_graded(submission_id)
    assert script.get(f"/api/submissions/{submission_id}").json()["score"] == 5.0
