"""One analyser process: ``python -m executor.analyser``. Imports the libraries and fills jedi's
caches of them (``engine.warm``), says ``{"ready": true}``, then answers one JSON request a line
on stdin with one JSON line on stdout: ``{"op": "complete"|"resolve"|"signatures"|"hover",
"code", "line", "column", "label"?}``. Its time and memory are bounded by the service that
started it, which kills it and starts another when a request runs too long."""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    out = sys.stdout
    sys.stdout = sys.stderr  # what a library prints must not be taken for an answer
    os.environ.setdefault("JAX_PLATFORMS", "cpu")  # read, never run: no accelerator is opened
    from executor.analyser import engine

    # The playground's own package is not the analysis's to read: jedi would list (and parse from
    # disk) the modules of any package imported here, so this one is forgotten, and its folder
    # leaves the path.
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(engine.__file__))))
    for name in [m for m in sys.modules if m == "executor" or m.startswith("executor.")]:
        del sys.modules[name]
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != root]

    # Warm before saying ready: a step of it can take seconds of CPU (np.'s first listing: 6 s),
    # which a request arriving meanwhile would wait behind.
    engine.warm()
    ops = {"complete": lambda r: engine.complete(r["code"], r["line"], r["column"]),
           "resolve": lambda r: engine.resolve(r["code"], r["line"], r["column"], str(r.get("label", ""))),
           "signatures": lambda r: engine.signatures(r["code"], r["line"], r["column"]),
           "hover": lambda r: engine.hover(r["code"], r["line"], r["column"])}
    out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = ops[request["op"]](request)
        except (RecursionError, MemoryError):
            answer = {"error": "the code is too deeply nested to analyse"}
        except Exception as e:  # noqa: BLE001 - any failure of the analysis is "no suggestions"
            answer = {"error": f"{type(e).__name__}: {str(e)[:200]}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
