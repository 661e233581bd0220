"""The runner's pure functions, without a sandbox: the source transformation, option parsing,
IPython's time format, text caps, HLO clean-up, error explanations and recompilation reasons."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from executor.runner import capture, common, explain, notebook, recompile, texts

COMPILED_PANE = Path(__file__).resolve().parents[2] / "frontend" / "src" / "panes" / "compiled.ts"


def test_magic_lines_become_calls_on_the_same_line():
    source = textwrap.dedent("""\
        x = 1
        %timeit -n5 fn(x)   # a comment
        y = %time f(x)
        s = '''
        %timeit inside a string
        '''
        z = (1
        %2)
        !pip install optax
        if x:
            %time g()
        """)
    out, replaced = notebook.transform(source)
    assert out.count("\n") == source.count("\n")
    lines = out.splitlines()
    assert lines[1].startswith("__import__('jaxplay')._line_magic('timeit', '-n5 fn(x)   # a comment', 2,")
    assert lines[2].startswith("y = __import__('jaxplay')._line_magic('time', 'f(x)', 3,")
    assert lines[4] == "%timeit inside a string"  # inside a string: untouched
    assert lines[7] == "%2)"  # inside brackets: the modulo operator
    assert "_line_magic('system', 'pip install optax', 9," in lines[8]
    assert lines[10].startswith("    __import__('jaxplay')._line_magic('time', 'g()', 11,")
    assert set(replaced) == {2, 3, 9, 11}
    compile(out, "<snippet>", "exec")


def test_cell_magic_keeps_line_numbers():
    out, _ = notebook.transform("%%timeit -n2\nx = 1\ny = x + 1\n")
    assert out.count("\n") == 3
    assert out.startswith("__import__('jaxplay')._cell_magic('timeit', '-n2', 'x = 1\\ny = x + 1\\n', 2,")


@pytest.mark.parametrize("args, opts, rest", [
    ("-n5 fn(x)", {"n": "5"}, "fn(x)"),
    ("-n 5 -r3 fn(x)", {"n": "5", "r": "3"}, "fn(x)"),
    ("-qo -n10 f()", {"q": "", "o": "", "n": "10"}, "f()"),
    ("fn(-x)", {}, "fn(-x)"),
])
def test_timeit_options(args, opts, rest):
    assert notebook.parse_options(args, "n:r:tcp:qo") == (opts, rest)


def test_ipython_time_format():
    assert common.format_time(0.436) == "436 ms"
    assert common.format_time(206e-6) == "206 \xb5s"
    assert common.format_time(3.67e-3) == "3.67 ms"
    assert common.format_time(12e-9) == "12 ns"
    assert common.format_time(62.0) == "1min 2s"
    r = notebook.TimeitResult(5, 7, 0.43, 0.44, [0.436 * 5] * 7, 0.0, 3)
    assert str(r) == "436 ms \xb1 0 ns per loop (mean \xb1 std. dev. of 7 runs, 5 loops each)"


def test_long_texts_are_cut_with_a_visible_marker():
    text = "\n".join("x" * 99 for _ in range(30000))  # 3 MB
    cut, was_cut = common.cap_text(text)
    assert was_cut and len(cut) < common.TEXT_CAP_CHARS + 100
    assert cut.endswith("… [truncated: 3.0 MB total]\n")
    assert common.cap_text("short") == ("short", False)


def test_hlo_stack_frame_tables_become_line_numbers():
    hlo = textwrap.dedent("""\
        HloModule jit_f, is_scheduled=true

        FileNames
        1 "/opt/playground/runner/notebook.py"
        2 "<snippet>"

        FunctionNames
        1 "f"

        FileLocations
        1 {file_name_id=1 function_name_id=1 line=10 end_line=10 column=0 end_column=5}
        2 {file_name_id=2 function_name_id=1 line=7 end_line=7 column=8 end_column=18}

        StackFrames
        1 {file_location_id=1 parent_frame_id=1}
        2 {file_location_id=2 parent_frame_id=1}


        ENTRY %main.1 (a: f32[3]) -> f32[3] {
          %a = f32[3]{0} parameter(0), metadata={op_name="x"}
          ROOT %sin.0 = f32[3]{0} sine(%a), metadata={op_name="jit(f)/sin" stack_frame_id=2}
        }
        """)
    text, where = texts.hlo_text(hlo)
    assert "FileNames" not in text and "notebook.py" not in text and "stack_frame_id" not in text
    lines = text.splitlines()
    assert where[[i for i, line in enumerate(lines) if "sine(" in line][0]] == 7
    assert len(where) == len(text.split("\n"))


def test_explanations():
    import jax
    import jax.numpy as jnp

    try:
        jnp.ones(3) + jnp.ones(4)
    except TypeError as exc:
        assert "broadcast" in explain.explanation(exc)
    try:
        jax.jit(lambda x: int(x))(1.0)
    except Exception as exc:  # noqa: BLE001
        assert "tracer" in explain.explanation(exc)
    assert explain.explanation(ZeroDivisionError("x")) is None


def test_a_recursion_that_ran_out_of_memory_is_explained():
    import sys

    def down(n):
        if n == 0:
            raise SystemError("error return without exception set")  # as CPython raises it then
        return down(n - 1)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        down(20_000)
    except SystemError as exc:
        said = explain.explanation(exc)
    finally:
        sys.setrecursionlimit(limit)
    assert said.startswith("The recursion went 20,0") and "fori_loop" in said
    try:
        down(3)
    except SystemError as shallow:  # not a deep recursion: no explanation made up for it
        assert explain.explanation(shallow) is None
    assert explain.explanation(MemoryError()) is None


def test_a_compile_notice_comes_only_for_a_long_compile_and_is_withdrawn_without_a_result(monkeypatch):
    import time


    sent = []
    monkeypatch.setattr(capture.common, "send", lambda type_, **fields: sent.append((type_, fields)) or True)
    info = {"name": "f", "signature": {"args": [{"name": "x", "type": "f32[3]"}], "static": {}},
            "via": "jit", "line": 1, "call_line": 2}

    def notice_sent():
        # The notice's timer thread may wake late on a loaded machine: the compile below is
        # "long" once the notice has gone, however late, and only then does it end.
        deadline = time.monotonic() + 30
        while not sent and time.monotonic() < deadline:
            time.sleep(0.01)

    # The quick compile ends a full second before its notice is due (a loaded machine may keep
    # this thread from running between the two lines for a while), and its timer's thread is
    # waited for: it ended without a word.
    monkeypatch.setattr(capture, "COMPILING_NOTICE_S", 1.0)
    quick = capture._CompileNotice(info)
    quick.cancel(withdraw=True)
    quick.timer.join(30)
    assert not quick.timer.is_alive()
    assert sent == []  # over before the notice was due: nothing to say, nothing to withdraw

    monkeypatch.setattr(capture, "COMPILING_NOTICE_S", 0.05)
    compiled = capture._CompileNotice(info)
    time.sleep(0.15)
    notice_sent()
    compiled.cancel()  # its "compiled" event follows
    assert sent == [("compiling", {"name": "f", "signature": "f(x: f32[3])", "via": "jit", "line": 1,
                                   "call_line": 2, "after_s": 0.05})]

    sent.clear()
    failed = capture._CompileNotice(info)
    time.sleep(0.15)
    notice_sent()
    failed.cancel(withdraw=True)  # an error, or XLA's cache: no "compiled" will come
    assert [(t, f.get("done")) for t, f in sent] == [("compiling", None), ("compiling", True)]


def _timeit(code: str, capsys) -> str:
    import jax  # noqa: F401 - imported, as in a runner (its template imported it)

    notebook.timeit(code, 1, 0, {"__name__": "__main__"}, None)
    return capsys.readouterr().out


def test_timeit_stops_at_its_budget_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(notebook, "TIMEIT_BUDGET_S", 0.5)
    out = _timeit("-n1 -r50 __import__('time').sleep(0.05)", capsys)
    done = int(out.split("stopped after ", 1)[1].split(" ")[0])
    assert 3 <= done < 50  # about 0.5 s of 0.05 s repeats
    assert f"stopped after {done} of 50 repeats: %timeit spends at most 0.5 s" in out
    assert f"(mean ± std. dev. of {done} runs, 1 loop each)" in out


def test_timeit_stops_before_the_run_s_wall_clock(monkeypatch, capsys):
    common.set_wall_clock(notebook.DEADLINE_MARGIN_S + 0.6)  # 0.6 s of room
    try:
        out = _timeit("-r7 __import__('time').sleep(0.25)", capsys)
    finally:
        common.set_wall_clock(None)
    assert "stopped after" in out and "the run's time limit is near" in out
    assert "of 7 runs" not in out


def test_timeit_with_no_time_left_reports_its_calibration(monkeypatch, capsys):
    common.set_wall_clock(notebook.DEADLINE_MARGIN_S + 0.1)
    try:
        out = _timeit("__import__('time').sleep(0.3)", capsys)
    finally:
        common.set_wall_clock(None)
    assert "(mean ± std. dev. of 1 run, 1 loop each)" in out
    assert "stopped after 1 of 7 repeats" in out


def _signature(*args, static=None, donated=(), ctx="ctx", fun_id=1) -> dict:
    """A compilation's signature as ``recompile.signature`` makes it: args are (name, type,
    shape, dtype, weak)."""
    return {"args": [{"name": n, "type": t, "shape": shape, "dtype": d, "weak": w, "sharding": None}
                     for n, t, shape, d, w in args],
            "static": dict(static or {}), "shardings": [], "donated": donated,
            "fun_ref": None, "fun_id": fun_id, "ctx": ctx}


def test_a_recompilation_reason_names_an_argument_as_written_and_never_opens_with_it():
    x3 = ("x", "f32[3]", (3,), "float32", False)
    x24 = ("x", "f32[2,4]", (2, 4), "float32", False)
    big = ("X", "i32[3]", (3,), "int32", False)
    reasons, _ = recompile._diff(_signature(x24, big), _signature(x3, ("X", "f32[3]", (3,), "float32", False)))
    assert [r for _, r in reasons] == ["argument x has a new shape: f32[3] → f32[2,4]",
                                       "argument X has a new dtype: f32[3] → i32[3]"]

    # Every kind of reason opens with one of the runner's own words, which the Compiled pane
    # (REASON_OPENINGS in compiled.ts) may capitalise without renaming anything.
    openings = re.search(r"const REASON_OPENINGS =\s*/(.+)/;", COMPILED_PANE.read_text())[1]
    scalar = ("x", "f32[]", (), "float32", True)
    typed = ("x", "f32[]", (), "float32", False)
    pairs = [
        (_signature(x24), _signature(x3)),                                    # shape
        (_signature(("x", "i32[3]", (3,), "int32", False)), _signature(x3)),  # dtype
        (_signature(scalar), _signature(typed)),                              # now a Python scalar
        (_signature(typed), _signature(scalar)),                              # now a typed array
        (_signature(("x", "f32[3]{S}", (3,), "float32", False)), _signature(x3)),  # sharding
        (_signature(("y", "f32[3]", (3,), "float32", False)), _signature(x3)),     # structure
        (_signature(x3, static={"n": "3"}), _signature(x3, static={"n": "2"})),
        (_signature(x3, donated=(0,)), _signature(x3)),
        (_signature(x3, ctx="x64"), _signature(x3)),
        (_signature(x3, fun_id=2), _signature(x3)),                            # a new function
        (_signature(x3), _signature(x3)),                                      # caches cleared
    ]
    kinds = set()
    for new, old in pairs:
        for kind, reason in recompile._diff(new, old)[0]:
            kinds.add(kind)
            assert re.match(openings, reason), reason
    assert kinds >= {"shape", "dtype", "weak_type", "sharding", "structure", "static", "donation",
                     "context", "new_function", "other"}


def _deep_snippet_error(depth: int) -> BaseException:
    import sys

    from executor.runner.common import SNIPPET_FILENAME

    code = compile("def down(n):\n    if n == 0:\n        raise MemoryError()\n    return down(n - 1)\n",
                   SNIPPET_FILENAME, "exec")
    namespace: dict = {}
    exec(code, namespace)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 100)
    try:
        namespace["down"](depth)
    except MemoryError as exc:
        return exc
    finally:
        sys.setrecursionlimit(limit)
    raise AssertionError("no error")


def test_a_deep_traceback_is_listed_at_both_ends_and_counted_between():
    from executor.runner.tracebacks import TRACEBACK_KEPT, describe_exception

    event = describe_exception(_deep_snippet_error(30_000))
    said = event["traceback"]
    assert event["line"] == 3 and event["exc_type"] == "MemoryError"
    between = 30_001 - 2 * TRACEBACK_KEPT
    assert f"[{between:,} more calls of the snippet's own]" in said, said
    assert len(said.splitlines()) < 30, said  # identical lines collapsed at both ends


def test_an_error_is_reported_even_when_describing_it_runs_out_of_memory(monkeypatch):
    from executor.runner import main

    exc = _deep_snippet_error(20_000)

    def full(_exc):
        raise MemoryError()

    monkeypatch.setattr(main, "describe_exception", full)
    event = main.error_event(exc)
    assert event["exc_type"] == "MemoryError" and event["line"] == 3
    # 20,001 of the snippet's and the frame that called it
    assert "[20,002 calls; the run's memory was too full to list them]" in event["traceback"]
    assert event["explanation"].startswith("The recursion went 20,002 calls deep")
    assert exc.__traceback__ is None  # the frames let go
