"""The node's compile cache through the real stack: a run loads what an earlier run compiled
(the executor had it compiled again by a fresh runner), says so on each compilation it loaded,
and gets the same results; a run can neither write the cache nor list it, can find an entry
only by asking its supervisor, who answers so many misses and no more, and a module it reports
falsely spoils nothing. Each snippet carries a constant of its own, so that what it
compiles is new to the suite's cache."""

from __future__ import annotations

import json
import stat
import time
import uuid
from pathlib import Path

import pytest

from executor.runner.compilecache import MAX_REPORTED, entry_key
from tests.conftest import compile_cache_root

pytestmark = pytest.mark.django_db(transaction=True)

SNIPPET = ("import jax, jax.numpy as jnp\n"
           "f = jax.jit(lambda x: jnp.sin(x) @ x.T + {c})\n"
           "print(f(jnp.ones((8, 8))).sum())\n")


def run(live_stack, code: str, **options) -> dict:
    status, answer = live_stack.post("/api/runs", {"code": code, **({"options": options} if options else {})})
    assert status == 201, answer
    return live_stack.wait_finished(answer["id"], timeout=90)


def compiled(run_: dict) -> list[dict]:
    return [e for e in run_["events"] if e["type"] == "compiled"]


def stdout(run_: dict) -> str:
    return "".join(e["text"] for e in run_["events"] if e["type"] == "stdout")


def until_loaded(live_stack, code: str, timeout: float = 60) -> dict:
    """Run ``code`` again until its compilation is loaded from the cache (the compile job runs
    once the node is idle)."""
    deadline = time.monotonic() + timeout
    while True:
        again = run(live_stack, code)
        if compiled(again) and compiled(again)[0].get("cached"):
            return again
        assert time.monotonic() < deadline, f"never loaded from the cache: {compiled(again)}"
        time.sleep(1)


def test_a_lean_run_that_imports_jax_by_a_name_it_builds_reports_and_loads_too(live_stack):
    # Code that does not name jax runs in a lean runner, which installs the cache's hook only as
    # the snippet imports jax: the run's folder must still be the one it was given.
    from executor.pool import runner_for

    code = ("import importlib\njaz = importlib.import_module('ja' + 'x')\n"
            "jnp = importlib.import_module('ja' + 'x.numpy')\n"
            f"f = jaz.jit(lambda x: jnp.sin(x) @ x.T + {uuid.uuid4().int % 10**6 + 0.25})\n"
            "print(f(jnp.ones((8, 8))).sum())\n")
    assert runner_for(code)["lean"] is True
    first = run(live_stack, code)
    assert first["status"] == "succeeded", first
    assert [e.get("cached") for e in compiled(first)] == [None]
    again = until_loaded(live_stack, code)  # reported by the lean run, compiled while idle, loaded
    assert stdout(again) == stdout(first)


def test_a_later_run_loads_what_an_earlier_run_compiled(live_stack):
    code = SNIPPET.format(c=uuid.uuid4().int % 10**6 + 0.5)
    first = run(live_stack, code)
    assert first["status"] == "succeeded", first
    [fresh] = compiled(first)
    assert fresh["name"] == "<lambda>" and not fresh.get("cached") and fresh["compile_ms"] > 0
    again = until_loaded(live_stack, code)
    assert again["status"] == "succeeded"
    assert stdout(again) == stdout(first)  # the same executable's result
    [loaded] = compiled(again)
    # What the Compiled pane shows is all there, from the loaded executable.
    assert loaded["cached"] is True and loaded["hlo"] and loaded["stablehlo"] and loaded["jaxpr"]
    assert loaded["flops"] == fresh["flops"] and loaded["memory"] == fresh["memory"]
    # Asked not to, a run compiles afresh.
    own = run(live_stack, code, compile_cache=False)
    assert [e.get("cached") for e in compiled(own)] == [None] and stdout(own) == stdout(first)


def test_a_run_can_neither_write_nor_list_the_cache(live_stack):
    code = SNIPPET.format(c=uuid.uuid4().int % 10**6 + 0.25)
    run(live_stack, code)
    until_loaded(live_stack, code)
    probe = run(live_stack, (
        "import os\n"
        "d = '/opt/playground/compile-cache'\n"
        "print('exists', os.path.isdir(d))\n"
        "try:\n    print('listed', os.listdir(d))\nexcept OSError as e:\n    print('list', type(e).__name__)\n"
        "try:\n    open(d + '/' + 'a' * 64, 'wb').write(b'x')\n    print('wrote')\n"
        "except OSError as e:\n    print('write', type(e).__name__)\n"))
    assert stdout(probe) == "exists True\nlist PermissionError\nwrite OSError\n", stdout(probe)


ASK = (
    "import os, json\n"
    "def ask(key):\n"
    "    os.write(3, (json.dumps({'type': 'compile_lookup', 'key': key}) + '\\n').encode())\n"
    "    line = b''\n"
    "    while not line.endswith(b'\\n'):\n"
    "        line += os.read(0, 1)\n"
    "    return json.loads(line)\n"
)


def test_a_run_is_answered_so_many_misses_and_then_compiles_everything_itself(live_stack):
    """A snippet asks its supervisor itself, as a hostile one would to test for someone's code:
    each guess a miss, until the run's misses are spent. From then on nothing is named, not even
    what is cached, so its own compilation is XLA's."""
    from executor.compilecache import MISSES_PER_RUN

    code = SNIPPET.format(c=uuid.uuid4().int % 10**6 + 0.375)
    run(live_stack, code)
    until_loaded(live_stack, code)
    probe = run(live_stack, code + ASK + (
        "answers = []\n"
        "while not (answers and answers[-1].get('spent')) and len(answers) < 500:\n"
        "    answers.append(ask('%064x' % len(answers)))\n"
        "print(len(answers), [a.get('name') for a in answers].count(None))\n"
        "os.write(3, b'{\"type\": \"compile_lookup\", \"key\": \"' + b'0' * 64 + b'\"}\\n')\n"
        "print('then', os.read(0, 100))\n"
        "jax.clear_caches()\n"
        "print(f(jnp.ones((8, 8))).sum())\n"))
    assert probe["status"] == "succeeded", probe
    lines = stdout(probe).splitlines()
    # The code's own compilation was loaded; the snippet's guesses were all misses, the last of
    # them saying so (the run's eager operations may have missed before, at most a report's
    # worth: what the first run reported is being compiled); then its stdin ended, and the same
    # compilation was XLA's.
    asked, missed = map(int, lines[1].split())
    assert asked == missed and MISSES_PER_RUN - MAX_REPORTED <= asked <= MISSES_PER_RUN, lines
    assert lines[2] == "then b''", lines
    assert [c.get("cached") for c in compiled(probe)] == [True, None], compiled(probe)
    assert lines[0] == lines[3]


def test_a_false_report_spoils_nothing(live_stack):
    """A snippet writes its own report on the runner's event pipe: a module that is not MLIR,
    devices that do not fill their shape, bytes that are not base64. None is stored, the run's
    events are its own, and a real module's entry still loads."""
    import base64

    code = SNIPPET.format(c=uuid.uuid4().int % 10**6 + 0.75)
    forged = [
        {"module": base64.b64encode(b"not a module").decode(), "options": "", "devices": [0], "shape": [1]},
        {"module": base64.b64encode(b"x" * 10).decode(), "options": "", "devices": [0, 1], "shape": [3]},
        {"module": "%%%", "options": "", "devices": [0], "shape": [1]},
    ]
    line = json.dumps({"type": "compiled_modules", "modules": forged}) + "\n"
    hostile = run(live_stack, f"import os\nos.write(3, {line.encode()!r})\nprint('sent')\n")
    assert hostile["status"] == "succeeded" and stdout(hostile) == "sent\n"
    # Nothing of the report is the run's: the page never sees it.
    assert not [e for e in hostile["events"] if e["type"] not in ("queued", "started", "stdout", "shapes", "finished")]
    run(live_stack, code)
    loaded = until_loaded(live_stack, code)
    assert compiled(loaded)[0]["cached"] is True
    folders = [f for f in Path(compile_cache_root()).iterdir() if f.is_dir()]
    assert folders and any(len(list(f.iterdir())) for f in folders)
    for folder in folders:
        assert not (folder / entry_key(b"not a module", b"", [0], [1])).exists()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o711


def test_a_bench_says_its_compilation_was_loaded(live_stack):
    code = ("import jax, jax.numpy as jnp, jaxplay\n"
            f"f = jax.jit(lambda x: jnp.cos(x) @ x + {uuid.uuid4().int % 10**6 + 0.125})\n"
            "jaxplay.bench(f, jnp.ones((16, 16)), repeats=3)\n")
    first = run(live_stack, code)
    [timing] = [e for e in first["events"] if e["type"] == "timing"]
    assert timing["compile_cached"] is False and "loaded from" not in timing["text"]
    again = until_loaded(live_stack, code)
    [timing] = [e for e in again["events"] if e["type"] == "timing"]
    assert timing["compile_cached"] is True and "(loaded from the node's compile cache)" in timing["text"]
