"""A forked runner imports nothing of the runner's own: every module a run needs was loaded by the
template it was forked from (``template.RUN_MODULES``), so no runner reads and compiles one from
source (2-4 ms of CPU a run)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# In a fresh interpreter: what the template loads (runner/template.py main), then whole runs as a
# forked runner serves them (main.serve_snippet), and which of the runner's modules they imported.
PROBE = textwrap.dedent("""
    import importlib, io, json, os, sys, threading
    lean = sys.argv[1] == "lean"
    import numpy.random
    if not lean:
        import jax
    from executor.runner import common, hooks, jaxcompat, template
    if not lean:
        jaxcompat.preload_lowering()
    for name in template.RUN_MODULES:
        importlib.import_module("executor.runner." + name)
    hooks.prepare_process(**({"defer_jax": True, "cpu_devices": 0} if lean else {}))
    from executor.runner import main
    loaded = {n for n in sys.modules if n.startswith("executor.runner.")}
    r, w = os.pipe()
    threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(r, 65536), b"")], daemon=True).start()
    channel = main.EventChannel(w)
    hooks.prepare_run(channel, font_cache=None, compile_cache=None)
    common.leave = lambda fd, code: None  # a runner exits here; the probe goes on
    real_stdout = sys.stdout
    for code in json.loads(sys.argv[2]):
        sys.stdout = io.TextIOWrapper(io.BytesIO(), write_through=True)
        main.serve_snippet({"op": "run", "code": code, "options": {}, "wall_s": 30}, channel, io.BytesIO(b""))
    sys.stdout = real_stdout
    # The runner hides its package before the code runs (runner/hiding.py): its modules are renamed.
    imported = sorted({n.split(".", 1)[1] for n in sys.modules if n.startswith("<runner ") and "." in n}
                      - {n.split(".", 2)[2] for n in loaded})
    print(json.dumps(imported))
""")

RUNS = {
    "full": ["print(1)\n",
             "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: x * 2)\nprint(f(jnp.arange(3)))\n",
             "x = 1\nraise ValueError(x)\n"],
    "lean": ["print(1)\n", "import numpy as np\nprint(np.arange(3).sum())\n", "1 / 0\n"],
}


@pytest.mark.parametrize("kind", sorted(RUNS))
def test_a_run_imports_none_of_the_runners_modules_itself(kind):
    done = subprocess.run([sys.executable, "-c", PROBE, kind, json.dumps(RUNS[kind])], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported == [], (f"a {kind} runner's runs imported {imported} themselves: add them to "
                            "runner/template.py RUN_MODULES")
