"""Notebook habits: ``%timeit``, ``%time``, a few harmless magics, and the value of a trailing
expression shown as Jupyter shows a cell's ``Out``.

The snippet's source is transformed line by line before it is compiled: a magic line becomes one
call into the helper module on the same line, so every line keeps its number and errors point at
the line the user wrote (tracebacks show the original text: ``linecache`` holds the original
source). ``%timeit -n5 fn(x)`` on line 7 becomes

    __import__('jaxplay')._line_magic('timeit', '-n5 fn(x)', 7, 0, globals(), locals())

and the statement is compiled by itself with filename ``<snippet>`` and its line number shifted
to 7. ``x = %time f(x)`` and ``r = %timeit -o f(x)`` work as in IPython; a first line
``%%time`` or ``%%timeit`` times the rest of the cell.
"""

from __future__ import annotations

import ast
import gc
import io
import math
import re
import resource
import statistics
import time
import tokenize

from . import common
from .protocol import Templated, parts_of

SNIPPET = common.SNIPPET_FILENAME
HELPER = "__import__('jaxplay')"
# The most one %timeit spends in all, its calibration included (IPython aims at about 0.2 s a
# repeat, 7 repeats); and how far before the run's wall clock it stops waiting.
TIMEIT_BUDGET_S = 10.0
DEADLINE_MARGIN_S = 1.5
# A repeat's loops take at least this long, as in IPython.
TIMEIT_REPEAT_S = 0.2

_MAGIC = re.compile(
    r"^(?P<indent>[ \t]*)"
    r"(?:(?P<target>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*)?"
    r"(?P<sigil>%%|%|!)(?P<rest>.*)$"
)


class UsageError(Exception):
    """A magic used wrongly, as IPython reports it."""


UsageError.__module__ = "jaxplay"  # tracebacks say jaxplay.UsageError, not the runner's path


# -- the source transformation ---------------------------------------------------------------


def _continuation_lines(lines: list[str]) -> set[int] | None:
    """0-based indices of lines that do not start a logical line (inside a multi-line string,
    open brackets, or after a backslash); None if the source does not tokenize."""
    inside: set[int] = set()
    depth = 0
    last_row = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            srow, erow = tok.start[0], tok.end[0]
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(depth - 1, 0)
            if erow > srow and tok.type in (tokenize.STRING, getattr(tokenize, "FSTRING_MIDDLE", -1),
                                            getattr(tokenize, "FSTRING_END", -1)):
                inside.update(range(srow, erow))  # rows srow+1..erow, as 0-based indices
            if tok.type == tokenize.NL and depth > 0:
                inside.add(erow)  # the next line continues the bracket
            last_row = erow
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    # Backslash continuations.
    for i, line in enumerate(lines[:-1]):
        if line.rstrip("\r\n").endswith("\\") and i not in inside:
            inside.add(i + 1)
    del last_row
    return inside


def transform(source: str) -> tuple[str, dict[int, str]]:
    """The source with its magic lines replaced (same number of lines), and {line number:
    original text} of the replaced lines."""
    lines = source.splitlines(keepends=True)
    candidates: dict[int, re.Match] = {}
    for i, line in enumerate(lines):
        m = _MAGIC.match(line.rstrip("\r\n"))
        if not m:
            continue
        rest = m["rest"]
        if m["sigil"] in ("%", "%%") and not re.match(r"[A-Za-z]", rest):
            continue
        if m["sigil"] == "!" and (m["target"] or not rest.strip() or rest.startswith("=")):
            continue
        if m["sigil"] == "%%" and m["target"]:
            continue
        candidates[i] = m
    if not candidates:
        return source, {}
    probe = [
        (m["indent"] + "pass" + _eol(lines[i])) if (m := candidates.get(i)) else line
        for i, line in enumerate(lines)
    ]
    inside = _continuation_lines(probe)
    if inside is not None:
        candidates = {i: m for i, m in candidates.items() if i not in inside}
    replaced: dict[int, str] = {}
    out = list(lines)
    for i, m in candidates.items():
        lineno = i + 1
        sigil, rest = m["sigil"], m["rest"]
        if sigil == "%%" and i != _first_code_line(lines):
            call = f"{HELPER}._line_magic('%misplaced', {rest.strip()!r}, {lineno}, 0, globals(), locals())"
            out[i] = m["indent"] + call + _eol(lines[i])
            replaced[lineno] = lines[i].rstrip("\r\n")
            continue
        if sigil == "%%":
            name, _, args = rest.partition(" ")
            body = "".join(lines[i + 1:])
            call = (f"{HELPER}._cell_magic({name!r}, {args.strip()!r}, {body!r}, {lineno + 1}, "
                    f"globals(), locals())")
            out[i] = m["indent"] + call + _eol(lines[i])
            for j in range(i + 1, len(lines)):
                out[j] = _eol(lines[j]) or ""
            replaced[lineno] = lines[i].rstrip("\r\n")
            break
        if sigil == "!":
            call = f"{HELPER}._line_magic('system', {rest.strip()!r}, {lineno}, 0, globals(), locals())"
        else:
            name, args = _split_magic(rest)
            col = len(lines[i].rstrip("\r\n")) - len(args) if args else 0
            call = f"{HELPER}._line_magic({name!r}, {args!r}, {lineno}, {col}, globals(), locals())"
        target = f"{m['target']} = " if m["target"] else ""
        out[i] = m["indent"] + target + call + _eol(lines[i])
        replaced[lineno] = lines[i].rstrip("\r\n")
    return "".join(out), replaced


def _first_code_line(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.strip() and not line.lstrip().startswith("#"):
            return i
    return -1


def _eol(line: str) -> str:
    return line[len(line.rstrip("\r\n")):]


def _split_magic(rest: str) -> tuple[str, str]:
    m = re.match(r"([A-Za-z_][\w]*)\s?(.*)$", rest)
    return (m.group(1), m.group(2)) if m else (rest, "")


# -- running a snippet ----------------------------------------------------------------------


def run(source: str, namespace: dict, show) -> None:
    """Run the snippet in ``namespace``; ``show(value)`` displays a trailing expression's value."""
    transformed, replaced = transform(source)
    try:
        tree = ast.parse(transformed, SNIPPET, "exec")
    except SyntaxError as exc:
        if exc.lineno in replaced:
            exc.text = replaced[exc.lineno]
        raise
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not _ends_with_semicolon(
            tree.body[-1], transformed):
        last = tree.body.pop()
    exec(compile(tree, SNIPPET, "exec", dont_inherit=True), namespace)
    if last is not None:
        value = eval(compile(ast.Expression(last.value), SNIPPET, "eval", dont_inherit=True), namespace)
        if value is not None:
            namespace["_"] = value
            show(value)


def _ends_with_semicolon(node: ast.stmt, source: str) -> bool:
    lines = source.splitlines()
    try:
        line = lines[node.end_lineno - 1].encode()
    except IndexError:
        return False
    after = line[node.end_col_offset:].decode(errors="replace").lstrip()
    return after.startswith(";")


# -- compiling a magic's statement at its line ---------------------------------------------------


def _parse_at(text: str, lineno: int, col: int, mode: str = "exec") -> ast.AST:
    """Parse ``text`` as if it stood at ``lineno``/``col`` of the snippet."""
    try:
        tree = ast.parse(text, SNIPPET, mode)
    except SyntaxError as exc:
        if exc.lineno is not None:
            if exc.lineno == 1 and exc.offset is not None:
                exc.offset += col
            exc.lineno += lineno - 1
            if getattr(exc, "end_lineno", None) is not None:
                exc.end_lineno += lineno - 1
        raise
    for node in ast.walk(tree):
        if hasattr(node, "lineno"):
            if node.lineno == 1:
                node.col_offset += col
                if getattr(node, "end_lineno", None) == 1 and node.end_col_offset is not None:
                    node.end_col_offset += col
            node.lineno += lineno - 1
            if getattr(node, "end_lineno", None) is not None:
                node.end_lineno += lineno - 1
    return tree


def _at_line(tree: ast.AST, lineno: int) -> ast.AST:
    for node in ast.walk(tree):
        if "lineno" in getattr(node, "_attributes", ()):
            node.lineno = node.end_lineno = lineno
            node.col_offset = node.end_col_offset = 0
    return tree


def _namespace(glob: dict, loc: dict | None) -> dict:
    if loc is None or loc is glob:
        return glob
    ns = dict(glob)
    ns.update(loc)
    return ns


def _is_blocking(node: ast.expr) -> bool:
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr == "block_until_ready":
            return True
        if isinstance(f, ast.Name) and f.id == "block_until_ready":
            return True
    return False


def _contains_jax_array(value) -> bool:
    try:
        import jax

        return any(isinstance(leaf, jax.Array) for leaf in jax.tree_util.tree_leaves(value))
    except Exception:  # noqa: BLE001 - user values and JAX internals raise anything
        return False


def strip_comment(text: str) -> str:
    """The statement without its trailing comment (``%timeit f(x)  # NumPy`` → ``f(x)``)."""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                lines = text.splitlines()
                row, col = tok.start
                lines[row - 1] = lines[row - 1][:col]
                text = "\n".join(lines)
                break
    except (tokenize.TokenError, SyntaxError):
        pass
    return text.strip()


class _Statement:
    """A magic's statement compiled into ``inner(_it, _timer) -> (seconds, last value)``."""

    def __init__(self, text: str, lineno: int, col: int, glob: dict, loc: dict | None):
        self.text = strip_comment(text)
        tree = _parse_at(text, lineno, col)
        body = tree.body
        self.is_expr = bool(body) and isinstance(body[-1], ast.Expr)
        self.blocking = self.is_expr and _is_blocking(body[-1].value)
        if self.is_expr:
            last = body[-1]
            assign = ast.Assign(targets=[ast.Name("_jp_value", ast.Store())], value=last.value)
            ast.copy_location(assign, last)
            body = body[:-1] + [assign]
        template = _at_line(ast.parse(
            "def __jaxplay_inner__(_it, _timer):\n"
            "    _jp_value = None\n"
            "    _t0 = _timer()\n"
            "    for _i in _it:\n"
            "        pass\n"
            "    _t1 = _timer()\n"
            "    return _t1 - _t0, _jp_value\n"
        ), lineno)
        loop = template.body[0].body[2]
        loop.body = body or [ast.Pass(lineno=lineno, col_offset=0, end_lineno=lineno, end_col_offset=0)]
        ast.fix_missing_locations(template)
        code = compile(template, SNIPPET, "exec", dont_inherit=True)
        self.ns = _namespace(glob, loc)
        had = "__jaxplay_inner__" in self.ns
        old = self.ns.get("__jaxplay_inner__")
        exec(code, self.ns)
        inner = self.ns.pop("__jaxplay_inner__")
        # Tracebacks show the timed statement's frame as "<timeit>".
        inner.__code__ = inner.__code__.replace(co_name="<timeit>", co_qualname="<timeit>")
        self.inner = inner
        if had:
            self.ns["__jaxplay_inner__"] = old

    def run(self, number: int) -> tuple[float, object]:
        gc_was = gc.isenabled()
        gc.disable()
        try:
            return self.inner(range(number), time.perf_counter)
        finally:
            if gc_was:
                gc.enable()


# -- %timeit / %time ---------------------------------------------------------------------------


def parse_options(args: str, spec: str) -> tuple[dict[str, str], str]:
    """IPython-style leading options (``-n5 -r 3 -qo stmt``): ({letter: value or ""}, rest).
    ``spec`` lists the letters; a letter followed by ':' takes a value."""
    takes_value = {c for i, c in enumerate(spec) if c != ":" and spec[i + 1:i + 2] == ":"}
    flags = {c for c in spec if c != ":"}
    opts: dict[str, str] = {}
    rest = args
    while True:
        stripped = rest.lstrip()
        m = re.match(r"-([A-Za-z]+)(.*)$", stripped, re.S)
        if not m or m.group(1)[0] not in flags:
            return opts, stripped
        cluster, after = m.group(1), m.group(2)
        i = 0
        while i < len(cluster):
            c = cluster[i]
            if c not in flags:
                raise UsageError(f"option -{c} not recognized")
            if c in takes_value:
                value = cluster[i + 1:]
                if value:
                    # "-n5" arrives as cluster "n" + after "5 ..." when the value is a digit.
                    pass
                elif after[:1].strip():
                    vm = re.match(r"(\S+)(.*)$", after, re.S)
                    value, after = vm.group(1), vm.group(2)
                else:
                    vm = re.match(r"\s*(\S+)(.*)$", after, re.S)
                    if not vm:
                        raise UsageError(f"option -{c} requires an argument")
                    value, after = vm.group(1), vm.group(2)
                opts[c] = value
                break
            opts[c] = ""
            i += 1
        rest = after


class TimeitResult:
    """What ``%timeit -o`` returns, with IPython's attributes."""

    def __init__(self, loops: int, repeat: int, best: float, worst: float, all_runs: list[float],
                 compile_time: float, precision: int):
        self.loops = loops
        self.repeat = repeat
        self.best = best
        self.worst = worst
        self.all_runs = all_runs
        self.compile_time = compile_time
        self._precision = precision
        self.timings = [dt / self.loops for dt in all_runs]

    @property
    def average(self) -> float:
        return math.fsum(self.timings) / len(self.timings)

    @property
    def stdev(self) -> float:
        mean = self.average
        return (math.fsum([(x - mean) ** 2 for x in self.timings]) / len(self.timings)) ** 0.5

    @property
    def median(self) -> float:
        return statistics.median(self.timings)

    def __str__(self) -> str:
        pm = "\xb1"
        return (
            "{mean} {pm} {std} per loop (mean {pm} std. dev. of {runs} run{run_plural}, "
            "{loops:,} loop{loop_plural} each)".format(
                pm=pm, runs=self.repeat, loops=self.loops,
                loop_plural="" if self.loops == 1 else "s",
                run_plural="" if self.repeat == 1 else "s",
                mean=common.format_time(self.average, self._precision),
                std=common.format_time(self.stdev, self._precision),
            )
        )

    def __repr__(self) -> str:
        return f"<TimeitResult : {self}>"


class _TimeitClock:
    """How long a %timeit may go on: its budget, and the run's wall clock."""

    def __init__(self, started: float):
        self.started = started
        self.repeat_s = 0.0  # what the last repeat took, its queued work included

    def stop_reason(self, next_s: float) -> str | None:
        """Why another ``next_s`` seconds of timing must not start, or None."""
        now = time.perf_counter()
        if now - self.started + next_s > TIMEIT_BUDGET_S:
            return "budget"
        deadline = common.deadline()
        if deadline is not None and time.monotonic() + next_s + DEADLINE_MARGIN_S > deadline:
            return "deadline"
        return None


def _drain(value) -> float:
    """Wait, untimed, for the computations the timed calls queued; the seconds that took."""
    if not _contains_jax_array(value):
        return 0.0
    t0 = time.perf_counter()
    try:
        import jax

        jax.block_until_ready(value)
    except Exception:  # noqa: BLE001 - a failed computation surfaces when the snippet uses it
        pass
    return time.perf_counter() - t0


def _dispatch_only(stmt: _Statement, value) -> bool:
    return stmt.is_expr and not stmt.blocking and _contains_jax_array(value)


# The sentences of a measurement's notes: templates with named args, sent beside the English so
# that a page says them in its reader's language (as recompile.py's reasons are).
DISPATCH_ONLY = ("Note: `{statement}` returns a JAX array without waiting for it, so this timed only the "
                 "dispatch (JAX computes asynchronously).")
QUEUED_ONE = ("Each repeat's call then kept the device busy for {time} more, which %timeit waited for "
              "between repeats without counting it.")
QUEUED = ("Each repeat's {number} calls then kept the device busy for {time} more, which %timeit waited "
          "for between repeats without counting it.")
TIME_BLOCKING = "Time `{blocking}` to include the computation."
NOT_WAITED = ("Note: the value is a JAX array that was not waited for, so this timed only the dispatch "
              "(JAX computes asynchronously). Add .block_until_ready() to include the computation.")
COMPILED_ONE = ("Note: {name} was compiled while timing ({ms} ms), in the first loop: the mean and the "
                "spread include it.")
COMPILED_MANY = ("Note: {count} functions were compiled while timing ({ms} ms), in the first loop: the "
                 "mean and the spread include it.")
COMPILED_ONE_TIME = "Note: {name} was compiled while timing ({ms} ms): the time includes it."
COMPILED_MANY_TIME = "Note: {count} functions were compiled while timing ({ms} ms): the time includes it."
LEAVE_COMPILATION_OUT = "Call it once before timing to leave compilation out."
STOPPED_ONE = "Note: stopped after {done} of 1 repeat: {why}."
STOPPED = "Note: stopped after {done} of {asked} repeats: {why}."
BUDGET = "%timeit spends at most {seconds} s"
TIME_LIMIT_NEAR = "the run's time limit is near"
FEWER = "Time fewer loops with -n and -r, or a smaller input."

TEMPLATES = (DISPATCH_ONLY, QUEUED_ONE, QUEUED, TIME_BLOCKING, NOT_WAITED, COMPILED_ONE, COMPILED_MANY,
             COMPILED_ONE_TIME, COMPILED_MANY_TIME, LEAVE_COMPILATION_OUT, STOPPED_ONE, STOPPED, BUDGET,
             TIME_LIMIT_NEAR, FEWER)

Note = list  # of Templated sentences; its English is them joined by a space


def note_text(note: Note) -> str:
    return " ".join(note)


def notes_fields(notes: list[Note]) -> dict:
    """A timing event's notes: the English, and each note's sentences as {"template", "args"}
    (none when an arg is too long to send: then the English alone)."""
    fields = {"notes": [note_text(note) for note in notes]}
    parts = [parts_of(note) for note in notes]
    if notes and None not in parts:
        fields["notes_parts"] = parts
    return fields


def _dispatch_note(stmt: _Statement, value, number: int = 1, queued_s: float = 0.0) -> Note | None:
    if not _dispatch_only(stmt, value):
        return None
    note = [Templated(DISPATCH_ONLY, statement=stmt.text)]
    if queued_s >= 0.001:
        time_ = common.format_time(queued_s)
        note.append(Templated(QUEUED_ONE, time=time_) if number == 1 else
                    Templated(QUEUED, number=f"{number:,}", time=time_))
    note.append(Templated(TIME_BLOCKING, blocking=_blocking_form(stmt.text)))
    return note


def _stopped_note(reason: str | None, done: int, asked: int) -> Note | None:
    if reason is None:
        return None
    why = Templated(BUDGET, seconds=f"{TIMEIT_BUDGET_S:g}") if reason == "budget" else Templated(TIME_LIMIT_NEAR)
    stopped = Templated(STOPPED_ONE, done=done, why=why) if asked == 1 else \
        Templated(STOPPED, done=done, asked=asked, why=why)
    return [stopped, Templated(FEWER)]


def _blocking_form(text: str) -> str:
    text = text.split("#", 1)[0].strip().rstrip(";")
    return f"{text}.block_until_ready()" if re.match(r"^[\w.]+\(.*\)$", text) else \
        f"jax.block_until_ready({text})"


def _compile_note(before: tuple[int, float], *, timeit_: bool = True) -> Note | None:
    """What compiled while timing: for %timeit in its first loop (the mean and spread include it),
    for %time in the time."""
    from . import capture
    count, seconds = capture.compile_counts()
    if count <= before[0]:
        return None
    n, ms = count - before[0], f"{(seconds - before[1]) * 1000:.0f}"
    if n == 1:
        said = Templated(COMPILED_ONE if timeit_ else COMPILED_ONE_TIME,
                         name=capture.stats.last_user or "a function", ms=ms)
    else:
        said = Templated(COMPILED_MANY if timeit_ else COMPILED_MANY_TIME, count=n, ms=ms)
    return [said, Templated(LEAVE_COMPILATION_OUT)]


def timeit(args: str, lineno: int, col: int, glob: dict, loc: dict | None, *, cell: str | None = None,
           cell_lineno: int | None = None):
    from . import capture

    opts, stmt_text = parse_options(args, "n:r:tcp:qo")
    if cell is not None:
        if stmt_text.strip():
            raise UsageError("%%timeit takes options on its first line, the statement below it")
        stmt_text, lineno, col = cell, cell_lineno, 0
    elif not stmt_text.strip():
        raise UsageError("%timeit needs a statement to time, e.g. %timeit f(x)")
    else:
        col += len(args) - len(stmt_text)
    try:
        number = int(opts.get("n", 0))
        repeat = int(opts.get("r", 7))
        precision = int(opts.get("p", 3))
    except ValueError as exc:
        raise UsageError(f"%timeit: {exc}") from None
    if repeat < 1 or number < 0:
        raise UsageError("%timeit: -r must be at least 1 and -n at least 1")
    quiet, want_result = "q" in opts, "o" in opts
    t0 = time.perf_counter()
    stmt = _Statement(stmt_text, lineno, col, glob, loc)
    compile_time = time.perf_counter() - t0
    clock = _TimeitClock(t0)
    value = None
    calibration = None
    if number == 0:
        # As IPython does: the number of loops that takes at least TIMEIT_REPEAT_S, counting
        # the wait for what they queued (a JAX call returns before it has computed), so that
        # a repeat never queues more work than fits the budget.
        # 1, 2, 5, 10, 20, 50...: as timeit.Timer.autorange, so a repeat takes 0.2 to 0.5 s,
        # seven of them well inside the budget.
        for number in (base * 10 ** power for power in range(10) for base in (1, 2, 5)):
            elapsed, value = stmt.run(number)
            queued = _drain(value)
            clock.repeat_s = elapsed + queued
            calibration = (elapsed, queued)
            if clock.repeat_s >= TIMEIT_REPEAT_S or clock.stop_reason(10 * clock.repeat_s):
                break
    before = capture.compile_counts()
    all_runs, queued_s = [], []
    stopped = None
    for _ in range(repeat):
        if (stopped := clock.stop_reason(clock.repeat_s)) is not None and (all_runs or calibration):
            break
        stopped = None
        elapsed, value = stmt.run(number)
        queued = _drain(value)
        clock.repeat_s = elapsed + queued
        all_runs.append(elapsed)
        queued_s.append(queued)
    if not all_runs:  # no time left for a repeat: the calibration's loops are the measurement
        all_runs, queued_s = [calibration[0]], [calibration[1]]
    best, worst = min(all_runs) / number, max(all_runs) / number
    result = TimeitResult(number, len(all_runs), best, worst, all_runs, compile_time, precision)
    lines = []
    if worst > 4 * best and best > 0 and worst > 1e-6:
        lines.append("The slowest run took %0.2f times longer than the fastest. This could mean "
                     "that an intermediate result is being cached." % (worst / best))
    lines.append(str(result))
    notes = [n for n in (_dispatch_note(stmt, value, number, statistics.median(queued_s)),
                         _compile_note(before), _stopped_note(stopped, len(all_runs), repeat)) if n]
    if not quiet:
        print("\n".join(lines + [note_text(note) for note in notes]), flush=True)
    common.send(
        "timing",
        kind="timeit",
        label=stmt.text[:200],
        line=lineno,
        repeats=len(all_runs),
        loops=number,
        mean_ms=common.ms(result.average, 6),
        std_ms=common.ms(result.stdev, 6),
        min_ms=common.ms(best, 6),
        max_ms=common.ms(worst, 6),
        median_ms=common.ms(result.median, 6),
        runs_ms=[common.ms(t, 6) for t in result.timings],
        text=str(result),
        blocked=stmt.blocking,
        dispatch_only=_dispatch_only(stmt, value),
        **notes_fields(notes),
    )
    return result if want_result else None


def time_magic(args: str, lineno: int, col: int, glob: dict, loc: dict | None, *, cell: str | None = None,
               cell_lineno: int | None = None):
    from . import capture

    if cell is not None:
        text, lineno, col = cell, cell_lineno, 0
    else:
        text = args
    if not text.strip():
        raise UsageError("%time needs a statement, e.g. %time f(x)")
    tree = _parse_at(text, lineno, col)
    ns = _namespace(glob, loc)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body.pop()
    before = capture.compile_counts()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    exec(compile(tree, SNIPPET, "exec", dont_inherit=True), ns)
    value = None
    if last is not None:
        value = eval(compile(ast.Expression(last.value), SNIPPET, "eval", dont_inherit=True), ns)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    user, system = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
    lines = [
        f"CPU times: user {common.format_time(user)}, sys: {common.format_time(system)}, "
        f"total: {common.format_time(user + system)}",
        f"Wall time: {common.format_time(wall)}",
    ]
    notes: list[Note] = []
    if last is not None and not _is_blocking(last.value) and _contains_jax_array(value):
            notes.append([Templated(NOT_WAITED)])
    if (note := _compile_note(before, timeit_=False)):
        notes.append(note)
    print("\n".join(lines + [note_text(note) for note in notes]), flush=True)
    common.send("timing", kind="time", label=strip_comment(text)[:200], line=lineno, repeats=1, loops=1,
                wall_ms=common.ms(wall, 6), mean_ms=common.ms(wall, 6), min_ms=common.ms(wall, 6),
                median_ms=common.ms(wall, 6), std_ms=0.0, cpu_user_ms=common.ms(user, 6),
                cpu_sys_ms=common.ms(system, 6), text="\n".join(lines), **notes_fields(notes))
    if cell is not None:
        return None if value is None else _CellValue(value)
    return value


class _CellValue:
    """A %%time cell's last value, handed back to be shown like a trailing expression."""

    def __init__(self, value):
        self.value = value


# -- dispatch --------------------------------------------------------------------------------

_NO_OPS = {
    "matplotlib": None,  # figures are always shown inline here
    "load_ext": "extensions are not loaded here",
    "config": None,
    "reload_ext": None,
    "autoreload": None,
    "precision": None,
    "xmode": None,
}


def line_magic(name: str, args: str, lineno: int, col: int, glob: dict, loc: dict | None):
    if name == "%misplaced":
        raise UsageError(f"%%{args.split()[0] if args.split() else ''} is a cell magic: it must be "
                         f"the first line of the snippet, and it applies to all the lines below it.")
    if name == "timeit":
        return timeit(args, lineno, col, glob, loc)
    if name == "time":
        return time_magic(args, lineno, col + (len(args) - len(args.lstrip())), glob, loc)
    if name in ("system", "sx", "pip", "conda", "sh", "bash"):
        what = f"!{args}" if name == "system" else f"%{name} {args}"
        common._stderr(f"[playground] skipped `{what.strip()}`: there is no shell and no network "
                       f"here. The libraries listed on the page are already installed.")
        return None
    if name == "env":
        import os

        if "=" in args:
            key, _, value = args.partition("=")
            os.environ[key.strip()] = value.strip()
            return None
        return os.environ.get(args.strip()) if args.strip() else dict(os.environ)
    if name in _NO_OPS:
        return None
    raise UsageError(f"Line magic function `%{name}` not found (the playground knows %timeit, "
                     f"%time, %env and ignores %matplotlib, %config, %load_ext).")


def cell_magic(name: str, args: str, body: str, body_lineno: int, glob: dict, loc: dict | None, show):
    if name == "timeit":
        return timeit(args, body_lineno, 0, glob, loc, cell=body, cell_lineno=body_lineno)
    if name == "time":
        out = time_magic(args, body_lineno, 0, glob, loc, cell=body, cell_lineno=body_lineno)
        if isinstance(out, _CellValue):
            show(out.value)
        return None
    raise UsageError(f"Cell magic `%%{name}` not found (the playground knows %%time and %%timeit).")
