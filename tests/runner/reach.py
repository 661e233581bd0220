"""How a snippet reaches the runner's own modules, and the graded run's answering code, now that no
import names them (executor/runner/hiding.py): as any code in a process can, by walking what the
process holds. Hostile snippets in the tests start with these, so that what they test (the
checker's verification of any answer, the supervisor's of any message) stays tested."""

# ``_runner_module("common")``: the runner's module of that file, found among sys.modules' values.
RUNNER_MODULE = """
import sys as _sys, types as _types
def _runner_module(name):
    for _m in list(_sys.modules.values()):
        _file = getattr(_m, "__file__", None) or ""
        if isinstance(_m, _types.ModuleType) and _file.endswith("/runner/" + name + ".py"):
            return _m
    raise LookupError(name)
"""

# ``_cell(test)``: the closure cell whose contents pass ``test``, found by walking the collector;
# ``_answering(name)`` the one that holds the answering code's inner function ``name``
# (runner/answers.py).
ANSWERING = RUNNER_MODULE + """
import gc as _gc
def _cell(test):
    for _o in _gc.get_objects():
        if type(_o) is _types.CellType:
            try:
                _v = _o.cell_contents
            except ValueError:
                continue
            if test(_v):
                return _o
    raise LookupError(test)
def _answering(name):
    return _cell(lambda v: getattr(v, "__qualname__", "").endswith("<locals>." + name)
                 and getattr(v, "__module__", "").endswith(".answers"))
def _take_over(forged):
    \"\"\"Answer every question with ``forged(question, real)``.\"\"\"
    _cell_of_answer = _answering("answer")
    _real = _cell_of_answer.cell_contents
    _cell_of_answer.cell_contents = lambda q: forged(q, _real)
def _replace_lowering(forged):
    \"\"\"Hand over ``forged(f, args, kwargs)`` whenever a lowering is asked.\"\"\"
    _cell(lambda v: type(v) is dict and "lower" in v and "call" in v).cell_contents["lower"] = forged
"""
