"""What a runner is given of the node's accelerator (executor/sandbox/devices.py): the one
allow-list of environment variables, the device nodes found at worker start, and the cause named
when a runner could not open its device, read from what real runtimes print."""

from __future__ import annotations

import os

from executor.sandbox import devices


def test_only_the_accelerators_variables_pass():
    environ = {
        "TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_SKIP_MDS_QUERY": "true", "TPU_WORKER_ID": "0",
        "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1", "CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".45",
        # Nothing else of the worker's: its broker URL, its secrets, its own path, jax's own flags.
        "REDIS_URL": "redis://secret@host/0", "SECRET_KEY": "x", "PYTHONPATH": "/opt/x", "HOME": "/root",
        "XLA_FLAGS": "--xla_dump_to=/tmp", "TPUX": "1", "MY_TPU_VAR": "1",
    }
    assert devices.accelerator_env(environ) == {
        "TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_SKIP_MDS_QUERY": "true", "TPU_WORKER_ID": "0",
        "TPU_CHIPS_PER_HOST_BOUNDS": "2,2,1", "CUDA_VISIBLE_DEVICES": "0,1", "NVIDIA_VISIBLE_DEVICES": "all",
        "XLA_PYTHON_CLIENT_MEM_FRACTION": ".45",
    }


def test_a_value_too_long_or_with_a_nul_is_not_passed():
    assert devices.accelerator_env({"TPU_A": "x" * 5000, "TPU_B": "a\0b", "TPU_C": "ok"}) == {"TPU_C": "ok"}


def test_device_nodes_are_found_per_kind(tmp_path):
    (tmp_path / "vfio").mkdir()
    for name in ("vfio/vfio", "vfio/1", "accel0", "accel1", "nvidia0", "nvidiactl"):
        (tmp_path / name).write_text("")
    (tmp_path / "nvidia-caps").mkdir()
    (tmp_path / "nvidia-caps" / "nvidia-cap1").write_text("")
    globs = {"tpu": (f"{tmp_path}/accel*", f"{tmp_path}/vfio/*"), "gpu": (f"{tmp_path}/nvidia*",)}
    assert devices.device_nodes("tpu", globs) == tuple(sorted(
        str(tmp_path / n) for n in ("accel0", "accel1", "vfio/1", "vfio/vfio")))
    # A folder of nodes is bound by its nodes, never whole.
    assert devices.device_nodes("gpu", globs) == tuple(sorted(
        str(tmp_path / n) for n in ("nvidia0", "nvidiactl", "nvidia-caps/nvidia-cap1")))
    assert devices.device_nodes("cpu", globs) == ()


def test_the_worker_settings_find_the_nodes_unless_told(monkeypatch):
    import importlib

    from executor import settings

    monkeypatch.setenv("EXECUTOR_KIND", "tpu")
    monkeypatch.setenv("TPU_ACCELERATOR_TYPE", "v5litepod-4")
    monkeypatch.setattr(devices, "DEVICE_GLOBS", {"tpu": ("/dev/null",)})
    try:
        found = importlib.reload(settings)
        assert found.DEVICES == ("/dev/null",)
        assert found.DEVICE_ENV["TPU_ACCELERATOR_TYPE"] == "v5litepod-4"
        assert found.READY_TIMEOUT_S == 30  # an accelerator's runner opens its device within this
        monkeypatch.setenv("EXECUTOR_DEVICES", "/dev/zero,/dev/full")
        assert importlib.reload(settings).DEVICES == ("/dev/zero", "/dev/full")
    finally:
        monkeypatch.undo()
        importlib.reload(settings)
    assert settings.KIND == os.environ.get("EXECUTOR_KIND", "cpu")


# What libtpu and jax printed on a v5e host when a second process opened the chip, and when the
# TPU_* variables were missing; and CUDA's when a GPU was held.
HELD = ('RuntimeError: Unable to initialize backend \'tpu\': ABORTED: Internal error when accessing libtpu '
        'multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile".')
NO_METADATA = ("W external/xla/xla/pjrt/tpu: Failed to get TPU metadata (tpu-env) from instance metadata for "
               "variable CHIPS_PER_HOST_BOUNDS: retrying")
NO_NODE = "RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to open /dev/vfio/1: No such file"


def test_the_cause_of_a_failed_start_is_named():
    assert devices.start_failure(HELD)[0] == "device_busy"
    assert devices.start_failure(NO_METADATA)[0] == "no_metadata"
    assert devices.start_failure(NO_NODE)[0] == "no_device_node"
    assert devices.start_failure("CUDA_ERROR_OUT_OF_MEMORY: out of memory")[0] == "device_busy"
    assert devices.start_failure("ModuleNotFoundError: No module named 'numpy'") is None
