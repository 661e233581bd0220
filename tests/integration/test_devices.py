"""Devices and routing through the real stack: the suite's CPU executor (queue exec.cpu) and a
second CPU executor posing as ``gpu:test`` through configuration (EXECUTOR_DEVICE_KIND), which
consumes exec.gpu and, added by itself, exec.gpu.test. A run goes where it asks, says where it
ran, and a kind or specific kind with no worker online is a 503 at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from django.test import Client

from bench.stack import ROOT
from playground.models import Run
from tests.conftest import POSING

pytestmark = pytest.mark.django_db(transaction=True)



def post_run(code: str, device: str):
    return Client().post("/api/runs", {"code": code, "device": device}, content_type="application/json")


def devices(client: Client | None = None) -> dict[str, dict]:
    answer = (client or Client()).get("/api/devices")
    assert answer.status_code == 200
    return {d["kind"]: d for d in answer.json()["devices"]}


def ran(live_stack, run_id: str) -> tuple[dict, dict]:
    detail = live_stack.wait_finished(run_id)
    started = next(e for e in detail["events"] if e["type"] == "started")
    return detail, started


class TestRouting:
    def test_a_specific_kind_runs_on_its_worker_and_says_so(self, live_stack, posing_gpu_worker):
        answer = post_run("import jax\nprint(jax.devices()[0].platform)\n", POSING)
        assert answer.status_code == 201, answer.content
        assert answer.json()["device"] == POSING
        detail, started = ran(live_stack, answer.json()["id"])
        assert detail["status"] == "succeeded", detail
        assert (started["kind"], started["device"]) == ("gpu", POSING)
        assert started["worker"].startswith("gpu-gpu-test@")
        # The stored run says where it ran, as the event does.
        assert (detail["device"], detail["ran_on"], detail["worker"]) == (POSING, POSING, started["worker"])
        assert detail["device_kind"] == started["device_kind"] == "cpu"  # a CPU posing as gpu:test
        stored = Run.objects.get(pk=detail["id"])
        assert (stored.device, stored.ran_on, stored.worker) == (POSING, POSING, started["worker"])
        assert started["jaxlib_version"] and started["memory_bytes"] > 0

    def test_a_kind_runs_on_a_worker_of_that_kind(self, live_stack, posing_gpu_worker):
        gpu = post_run("print('on a gpu')\n", "gpu")
        cpu = post_run("print('on a cpu')\n", "cpu")
        assert gpu.status_code == cpu.status_code == 201
        _, on_gpu = ran(live_stack, gpu.json()["id"])
        detail, on_cpu = ran(live_stack, cpu.json()["id"])
        assert (on_gpu["kind"], on_gpu["device"]) == ("gpu", POSING)
        assert on_gpu["worker"].startswith("gpu-gpu-test@")
        assert (on_cpu["kind"], on_cpu["device"], on_cpu["device_count"]) == ("cpu", "cpu:cpu", 8)
        assert on_cpu["worker"].startswith("cpu-executor@")
        assert detail["ran_on"] == "cpu:cpu"

    def test_runs_queued_behind_a_busy_worker_are_told_their_place_in_line(self, live_stack, posing_gpu_worker):
        # The posing worker has one slot: a run that sleeps holds it, and those sent after wait.
        holder = post_run("import time\nprint('holding', flush=True)\ntime.sleep(4)\n", POSING)
        assert holder.status_code == 201, holder.content
        deadline = time.monotonic() + 60
        while not [e for e in live_stack.get(f"/api/runs/{holder.json()['id']}")["events"] if e["type"] == "stdout"]:
            assert time.monotonic() < deadline, "the holder never started"
            time.sleep(0.1)
        waiting = [post_run(f"print({n})\n", POSING) for n in range(3)]
        assert [w.status_code for w in waiting] == [201] * 3
        positions = [next(e["position"] for e in live_stack.get(f"/api/runs/{w.json()['id']}")["events"]
                          if e["type"] == "queued") for w in waiting]
        assert positions == [1, 2, 3], positions
        assert all(live_stack.wait_finished(w.json()["id"])["status"] == "succeeded" for w in waiting)

    def test_limits_follow_the_kind(self, live_stack, posing_gpu_worker, settings):
        """RUN_LIMITS_BY_KIND: a GPU run asks for the GPU's wall clock, a CPU run for the CPU's."""
        settings.RUN_LIMITS_BY_KIND = {**settings.RUN_LIMITS_BY_KIND,
                                       "gpu": {**settings.RUN_LIMITS_BY_KIND["gpu"], "wall_s": 1}}
        spin = "import time\ntime.sleep(3)\nprint('done')\n"
        gpu, cpu = post_run(spin, "gpu"), post_run(spin, "cpu")
        gpu_run, _ = ran(live_stack, gpu.json()["id"])
        cpu_run, _ = ran(live_stack, cpu.json()["id"])
        assert gpu_run["status"] == "timed_out", gpu_run
        assert cpu_run["status"] == "succeeded", cpu_run


class TestSharingAndCourses:
    """A specific kind is a device like any other for what is built on runs (shared through daphne)."""

    def test_a_run_on_a_specific_kind_is_shared_with_its_output(self, live_stack, posing_gpu_worker):
        code = "print('shared from', 'gpu:test')\n"
        status, created = live_stack.post("/api/runs", {"code": code, "device": POSING})
        assert status == 201, created
        assert live_stack.wait_finished(created["id"])["status"] == "succeeded"
        status, shared = live_stack.post("/api/snippets", {"code": code, "run": created["id"]})
        assert status == 201, shared
        assert shared["run"] == created["id"]
        snippet = live_stack.get(f"/api/snippets/{shared['slug']}")
        assert snippet["device"] == POSING and snippet["jax_version"]
        # print writes its parts one by one; a busy node may send them as more than one event
        stdout = "".join(e.get("text", "") for e in snippet["run"]["events"] if e.get("type") == "stdout")
        assert stdout == "shared from gpu:test\n"

    def test_an_assignment_on_a_specific_kind_runs_there(self, live_stack, posing_gpu_worker, django_user_model):
        from courses.actions.assignments import do_create_assignment
        from courses.actions.courses import do_create_course
        from courses.actions.members import do_join_course

        teacher = django_user_model.objects.create_user("gpu-teacher", password="pw-for-tests-1")
        learner = django_user_model.objects.create_user("gpu-learner", password="pw-for-tests-1")
        course = do_create_course(teacher, "GPUs")
        do_join_course(course, learner)
        assignment = do_create_assignment(course, title="On a GPU", device=POSING)
        client = Client()
        client.force_login(learner)
        answer = client.post(f"/api/assignments/{assignment.pk}/runs", {"code": "print('graded elsewhere')\n"},
                             content_type="application/json")
        assert answer.status_code == 201, answer.content
        detail, started = ran(live_stack, answer.json()["id"])
        assert detail["status"] == "succeeded" and started["device"] == POSING
        assert started["worker"].startswith("gpu-gpu-test@")


class TestAvailability:
    def test_the_kinds_online_are_listed_with_their_specific_kinds(self, live_stack, posing_gpu_worker):
        # A run of the test before may still hold the runner until the worker's next heartbeat.
        deadline = time.monotonic() + 30
        while (listed := devices())["gpu"]["free_runners"] < 1:
            assert time.monotonic() < deadline, listed["gpu"]
            time.sleep(0.2)
        gpu, cpu, tpu = listed["gpu"], listed["cpu"], listed["tpu"]
        assert gpu["online"] and gpu["workers"] == 1 and gpu["slots"] == 1
        assert gpu["free_runners"] == 1 and gpu["queue_depth"] == 0
        assert gpu["jax_version"] and gpu["jaxlib_version"] and gpu["memory_bytes"] > 0
        [specific] = gpu["specific"]
        assert {"device": POSING, "workers": 1, "slots": 1, "free_runners": 1, "queue_depth": 0,
                "device_kind": "cpu", "device_count": 1}.items() <= specific.items()
        assert cpu["online"] and [s["device"] for s in cpu["specific"]] == ["cpu:cpu"]
        assert cpu["memory_bytes"] > 0 and cpu["device_count"] == 8
        assert tpu == tpu | {"online": False, "workers": 0, "specific": []}
        # Daphne's answer is the same.
        assert {d["kind"]: d["online"] for d in live_stack.get("/api/devices")["devices"]} == {
            "cpu": True, "gpu": True, "tpu": False}

    @pytest.mark.parametrize("device", ["tpu", "gpu:h200", "cpu:h200", "tpu:v5-lite"])
    def test_a_kind_with_no_worker_online_is_a_503_at_once(self, live_stack, posing_gpu_worker, device):
        started = time.monotonic()
        answer = post_run("print(1)", device)
        assert answer.status_code == 503, answer.content
        assert f"no {device} executor is online" in answer.json()["error"]
        assert time.monotonic() - started < 2
        assert not Run.objects.filter(device=device).exists()

    @pytest.mark.parametrize("device", ["gpu:H200", "gpu:", "fpga", "gpu:h200:0", "gpu:" + "a" * 33, "gpu:../x",
                                        "gpu:test\n"])
    def test_a_malformed_device_is_a_400(self, live_stack, device):
        answer = post_run("print(1)", device)
        assert answer.status_code == 400, answer.content
        assert "unknown device" in answer.json()["error"]


def test_a_worker_that_stops_takes_its_kind_off_the_list(live_stack, posing_gpu_worker, redis_client, settings):
    """Killed without a goodbye (SIGKILL): its heartbeats stop, and once they are older than the
    online window (shortened here, but longer than the 5 s between a living worker's beats, so
    that the CPU worker stays online) the kind is offline and a run for it is a 503."""
    settings.EXECUTOR_ONLINE_WINDOW_S = 7
    assert devices()["gpu"]["online"]
    live_stack.kill("gpu-test", signal.SIGKILL)
    killed = time.monotonic()
    while devices()["gpu"]["online"]:
        assert time.monotonic() - killed < 15, "the gpu kind is still listed 15 s after its worker died"
        time.sleep(0.2)
    gpu = devices()["gpu"]
    assert gpu["workers"] == 0 and gpu["specific"] == [] and devices()["cpu"]["online"]
    assert post_run("print(1)", POSING).status_code == 503
    assert post_run("print(1)", "gpu").status_code == 503


def test_a_worker_whose_devices_do_not_match_its_kind_refuses_to_start(live_stack, redis_client, tmp_path):
    """Started for gpu on a machine whose runners find only a CPU (no EXECUTOR_DEVICE_KIND pose),
    the worker says what it found and exits before it consumes anything."""
    log = tmp_path / "refusing.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [sys.executable, "-m", "celery", "-A", "executor.worker", "worker", "-Q", "exec.gpu", "-P", "threads",
             "-c", "1", "-n", "refusing@%h", "--without-gossip", "--without-mingle", "-l", "info"],
            cwd=ROOT, env={**live_stack.env, "EXECUTOR_KIND": "gpu", "EXECUTOR_POOL_SIZE": "1"},
            stdout=out, stderr=subprocess.STDOUT, timeout=180,
        )
    said = log.read_text()
    assert proc.returncode != 0, said
    assert "refuses to start: this worker serves gpu (queue exec.gpu) but its runners found only 1 × cpu" \
        " on the cpu platform" in said, said
    assert "EXECUTOR_DEVICES=/dev/nvidia0" in said
    # Never online: it did not beat before it had checked its devices.
    assert not [n for n in redis_client.zrange("executors:gpu", 0, -1) if n.startswith(b"refusing@")]

