"""An executor refuses to start without a sandbox unless told explicitly, and says why."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.stack import ROOT


def start_worker(**env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import executor.worker"],
        cwd=ROOT, env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("env, message", [
    ({"EXECUTOR_SANDBOX": "none"}, "set EXECUTOR_ALLOW_UNSANDBOXED=1"),
    ({"EXECUTOR_SANDBOX": "chroot"}, "unknown sandbox backend 'chroot'; choose one of bwrap, fork, none"),
    ({"EXECUTOR_POOL_SIZE": "two"}, "EXECUTOR_POOL_SIZE='two' is not an integer"),
    ({"RUN_PIDS": "16"}, "RUN_PIDS=16 must be at least 96"),
    ({"EXECUTOR_KIND": "fpga"}, "EXECUTOR_KIND='fpga': choose one of cpu, gpu, tpu"),
    ({"EXECUTOR_ALLOW_UNSANDBOXED": "maybe"}, "use 1/0, true/false"),
])
def test_it_refuses_to_start_with_a_bad_configuration(env, message):
    result = start_worker(**env)
    assert result.returncode != 0
    assert message in result.stderr


def test_it_starts_unsandboxed_only_when_allowed_and_warns_loudly():
    result = start_worker(EXECUTOR_SANDBOX="none", EXECUTOR_ALLOW_UNSANDBOXED="1")
    assert result.returncode == 0, result.stderr
    assert "WITHOUT A SANDBOX" in result.stderr


def test_it_never_sets_up_django_even_where_its_settings_module_is_in_the_environment():
    # A shared env file gives every process DJANGO_SETTINGS_MODULE; Celery's Django fix-up would
    # then set Django up in the executor as its worker starts (its apps, every view, the checks).
    # (kombu's JSON imports django.utils.functional where Django is installed: a module, no setup.)
    probe = ("import sys, executor.worker as w; w.app.loader.init_worker(); w.app.loader.import_default_modules(); "
             "print(sorted(m for m in sys.modules if m.startswith(('django.apps', 'django.db', 'django.urls', "
             "'django.core.checks', 'playground', 'web.'))))")
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "EXECUTOR_SANDBOX": "none", "EXECUTOR_ALLOW_UNSANDBOXED": "1",
             "DJANGO_SETTINGS_MODULE": "web.settings", "DEBUG": "1"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout
