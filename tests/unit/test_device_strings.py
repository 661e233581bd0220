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
