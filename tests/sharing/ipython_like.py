"""Runs a notebook's code cells one after another as an IPython kernel would, in a plain Python
that has jax and numpy but no IPython and no playground: ``python -I ipython_like.py cells.json``.

The cells come with their magic lines already made calls on ``_ipython`` (the test turns them so
with the runner's own transformation, whose rules for what is a magic line are IPython's). Here
those calls do what IPython does: ``%timeit`` and ``%%timeit`` time with the standard library's
``timeit``, ``%time`` and ``%%time`` run and say how long they took, ``!cmd`` runs a shell. A
cell's last expression is shown as IPython's display hook shows it: nothing for None or after a
``;``, else ``_ipython_display_`` when the value has one, else its repr. Each cell's output
follows a line ``--- cell N``; the first cell that raises prints its traceback and ends the
process with status 1.
"""

import ast
import json
import re
import statistics
import subprocess
import sys
import time
import timeit
import traceback


def show(value):
    if value is None:
        return
    hook = getattr(type(value), "_ipython_display_", None)
    if hook is not None:
        hook(value)
    else:
        print(repr(value))


def run_code(source, ns, filename):
    tree = ast.parse(source, filename)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        line = source.splitlines()[tree.body[-1].end_lineno - 1]
        if not line[tree.body[-1].end_col_offset:].lstrip().startswith(";"):
            last = tree.body.pop()
    exec(compile(tree, filename, "exec"), ns)
    if last is not None:
        show(eval(compile(ast.Expression(last.value), filename, "eval"), ns))


def options(args, letters):
    """IPython's leading options (``-n5 -r 3 stmt``): ({letter: value}, the statement)."""
    found = {}
    while True:
        m = re.match(r"\s*-([A-Za-z])\s*(\d*)\s*", args)
        if not m or m[1] not in letters:
            return found, args.strip()
        found[m[1]] = m[2]
        args = args[m.end():]


def format_time(seconds):
    for unit, scale in (("s", 1), ("ms", 1e3), ("µs", 1e6), ("ns", 1e9)):
        if seconds * scale >= 1 or unit == "ns":
            return f"{seconds * scale:.3g} {unit}"


def timeit_magic(args, ns, body=None):
    opts, stmt = options(args, "nrqo")
    timer = timeit.Timer(body if body is not None else stmt, setup=stmt if body is not None else "pass",
                         globals=ns)
    number = int(opts.get("n") or 0) or timer.autorange()[0]  # as IPython: loops of 0.2 s or more
    repeats = int(opts.get("r") or 7)
    per_loop = [t / number for t in timer.repeat(repeats, number)]
    spread = statistics.pstdev(per_loop)
    print(f"{format_time(statistics.mean(per_loop))} ± {format_time(spread)} per loop (mean ± std. dev. of "
          f"{repeats} runs, {number} loop{'s' if number != 1 else ''} each)")


def time_magic(stmt, ns, body=None):
    t0 = time.perf_counter()
    try:
        if body is not None:
            run_code(body, ns, "<cell>")
            return None
        try:
            return eval(compile(stmt, "<timed>", "eval"), ns)
        except SyntaxError:
            exec(compile(stmt, "<timed>", "exec"), ns)
            return None
    finally:
        print(f"Wall time: {format_time(time.perf_counter() - t0)}")


class IPythonMagics:
    def _line_magic(self, name, args, lineno, col, glob, loc):
        if name == "timeit":
            return timeit_magic(args, glob)
        if name == "time":
            return time_magic(args, glob)
        if name in ("system", "sh", "bash"):
            subprocess.run(args, shell=True, check=False)
            return None
        if name in ("matplotlib", "config", "load_ext"):
            return None
        raise NameError(f"UsageError: Line magic function `%{name}` not found.")

    def _cell_magic(self, name, args, body, body_lineno, glob, loc):
        if name == "timeit":
            return timeit_magic(args, glob, body)
        if name == "time":
            return time_magic(args, glob, body)
        raise NameError(f"UsageError: Cell magic `%%{name}` not found.")


def main(path):
    cells = json.loads(open(path).read())
    ns = {"__name__": "__main__", "_ipython": IPythonMagics()}
    for n, source in enumerate(cells, 1):
        print(f"--- cell {n}", flush=True)
        try:
            run_code(source, ns, f"<cell {n}>")
        except BaseException:  # noqa: BLE001 - a notebook shows any error, and so does the test
            traceback.print_exc()
            sys.stdout.flush()
            sys.exit(1)
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
