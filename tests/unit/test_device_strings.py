"""Device strings (a kind, or a kind and a specific device kind), their queues, the names a
worker derives from jax's device kinds, and the per-kind settings of an executor."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.stack import ROOT
from executor import registry


@pytest.mark.parametrize("device, ok", [
    ("cpu", True), ("gpu", True), ("tpu", True), ("gpu:h200", True), ("tpu:v5-lite", True), ("gpu:test", True),
    ("gpu:a100-sxm4-80gb", True), ("gpu:" + "a" * 32, True),
    ("quantum", False), ("gpu:", False), ("gpu:H200", False), ("gpu:-x", False), ("gpu:h200:0", False),
    ("gpu:" + "a" * 33, False), ("gpu:a b", False), ("gpu:../x", False), ("GPU", False), ("gpu\n", False),
])
def test_device_strings_are_validated_by_one_pattern(device, ok):
    assert bool(registry.DEVICE_PATTERN.fullmatch(device)) is ok


def test_a_specific_kind_has_its_own_queue():
    assert registry.queue_name("gpu") == "exec.gpu"
    assert registry.queue_name("gpu:h200") == "exec.gpu.h200"
    assert registry.parse_device("tpu:v5-lite") == ("tpu", "v5-lite")
    assert registry.parse_device("cpu") == ("cpu", None)


@pytest.mark.parametrize("device_kind, name", [
    ("NVIDIA H200", "h200"), ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"), ("Tesla T4", "t4"),
    ("TPU v5 lite", "v5-lite"), ("TPU v4", "v4"), ("cpu", "cpu"), (None, "unknown"), ("", "unknown"),
    ("  weird / name!! ", "weird-name"),
])
def test_a_worker_names_its_specific_kind_from_jax(device_kind, name):
    assert registry.specific_name(device_kind) == name
    assert registry.DEVICE_PATTERN.fullmatch(f"gpu:{name}")


def executor_settings(**env) -> subprocess.CompletedProcess:
    code = ("import json; from executor import settings as s; "
            "print(json.dumps({'kind': s.KIND, 'specific': s.SPECIFIC, 'configured': s.DEVICE_KIND_CONFIGURED, "
            "'wall_s': s.LIMITS.wall_s, 'memory': s.LIMITS.memory_bytes, 'output': s.LIMITS.output_bytes, "
            "'heartbeat': s.HEARTBEAT_S}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PATH": "/usr/bin:/bin", **env},
                          capture_output=True, text=True, timeout=60)


def test_a_cpu_worker_can_pose_as_a_specific_gpu_kind_by_configuration():
    result = executor_settings(EXECUTOR_DEVICE_KIND="gpu:test", EXECUTOR_HEARTBEAT_S="1")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    assert {"kind": "gpu", "specific": "test", "configured": True, "heartbeat": 1}.items() <= got.items()


@pytest.mark.parametrize("env, message", [
    ({"EXECUTOR_DEVICE_KIND": "gpu:H 200"}, "EXECUTOR_DEVICE_KIND='gpu:h 200': use a name such as h200"),
    ({"EXECUTOR_DEVICE_KIND": "fpga:x"}, "EXECUTOR_DEVICE_KIND='fpga:x'"),
    ({"EXECUTOR_DEVICE_KIND": "gpu:test", "EXECUTOR_KIND": "tpu"}, "is a gpu kind but EXECUTOR_KIND=tpu"),
    ({"EXECUTOR_HEARTBEAT_S": "0"}, "EXECUTOR_HEARTBEAT_S=0 must be at least 1"),
])
def test_a_bad_device_configuration_stops_the_worker(env, message):
    result = executor_settings(**env)
    assert result.returncode != 0 and message in result.stderr, result.stderr


def test_limits_can_be_set_for_the_workers_kind():
    env = {"RUN_WALL_S": "30", "RUN_WALL_S_GPU": "120", "RUN_MEMORY_MB_GPU": "8192", "RUN_OUTPUT_KB_TPU": "99"}
    gpu = json.loads(executor_settings(EXECUTOR_KIND="gpu", **env).stdout)
    cpu = json.loads(executor_settings(EXECUTOR_KIND="cpu", **env).stdout)
    assert (gpu["wall_s"], gpu["memory"], gpu["output"]) == (120, 8192 * 1024**2, 1024 * 1024)
    assert (cpu["wall_s"], cpu["memory"], cpu["output"]) == (30, 2048 * 1024**2, 1024 * 1024)


def test_queue_lists_are_the_ones_kombus_redis_transport_uses():
    """registry.queue_lists names kombu's lists itself (for queue depth without a broker
    connection): they must be what kombu publishes to, at each priority step."""
    import redis
    from kombu import Connection, Exchange, Queue
    from kombu.transport.redis import PRIORITY_STEPS

    from tests.conftest import TEST_REDIS_URL

    assert list(registry.PRIORITY_STEPS) == PRIORITY_STEPS
    url = TEST_REDIS_URL.rsplit("/", 1)[0] + "/11"  # a database of its own, emptied
    other = redis.Redis.from_url(url)
    other.flushdb()
    queue = Queue(registry.queue_name("gpu:h200"), Exchange("exec.gpu"), routing_key="exec.gpu.h200")
    with Connection(url) as connection:
        producer = connection.Producer()
        for step in PRIORITY_STEPS:
            producer.publish({"step": step}, exchange=queue.exchange, routing_key=queue.routing_key,
                             declare=[queue], priority=step, serializer="json")
    assert [other.llen(key) for key in registry.queue_lists("gpu:h200")] == [1, 1, 1, 1]
    assert registry.queue_depth(other, "gpu:h200") == 4
    other.flushdb()


@pytest.mark.parametrize("active, step", [(0, 0), (1, 3), (2, 6), (3, 6), (10, 6)])
def test_a_clients_next_run_goes_behind_everyone_elses_earlier_ones(active, step):
    """The last step (9) is a regrade's: below every run a person is waiting for."""
    from playground import quotas

    assert quotas.priority(active) == step
    assert quotas.REGRADE_STEP == 9


def test_every_recorder_task_goes_to_the_record_queue_and_nothing_else_does():
    """However a recorder task is sent (a retry, a grading's settle after the grace), it goes to
    queue "record", where the recorder listens; the executor's run task to its kind's queue."""
    import courses.tasks  # noqa: F401  (registers its tasks)
    import playground.tasks  # noqa: F401  (registers its tasks)
    from executor.submit import RUN_TASK
    from web.celery import app

    recorder = sorted(name for name in app.tasks if name.startswith("recorder."))
    assert {"recorder.record_events", "recorder.record_grade", "recorder.settle_grading"} <= set(recorder)
    for name in recorder:
        assert app.amqp.router.route({}, name)["queue"].name == "record", name
        assert "queue" not in type(app.tasks[name]).__dict__, f"{name} sets the deprecated queue attribute"
    assert app.amqp.router.route({"queue": registry.queue_name("gpu:h200")}, RUN_TASK)["queue"].name == "exec.gpu.h200"
