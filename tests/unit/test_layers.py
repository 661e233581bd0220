"""The walls between the layers, read from every import in the tree with ``ast`` (function-level
imports too, and the front end's relative imports), against the whiteboard in
``docs/architecture.json`` and the rules ``docs/ARCHITECTURE.md`` states: the web side imports
only the executor's shared modules, never its worker side; the runner imports only itself, the
standard library and the libraries a runtime ships; the executor imports no app and no Django;
``web/``'s library imports no app (only its shell points up); every arrow between parts is drawn
and every drawn arrow is there; and no module imports itself around a loop."""

from __future__ import annotations

import ast
import functools
import json
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("web", "playground", "snippets", "notebooks", "accounts", "courses", "ops", "assistants", "executor",
            "bench")
WEB_SIDE = ("web", "playground", "snippets", "notebooks", "accounts", "courses", "ops", "assistants")
APPS = ("playground", "snippets", "notebooks", "accounts", "courses", "ops", "assistants")
# The executor's modules the web side may import: the protocol and the grade, the queues' names
# and the submission of a run, the runtimes' and shares' tables, logging and settings helpers.
# Each imports only these, the standard library, redis and celery; never the worker, the pool,
# the supervisor, the sandbox or jax. (Also listed in executor/__init__.py's docstring.)
SHARED = frozenset({
    "executor", "executor.events", "executor.registry", "executor.runtimes", "executor.shares",
    "executor.submit", "executor.logs", "executor.envvars", "executor.celeryconf", "executor.sessionstate",
    "executor.processes", "executor.analyser", "executor.analyser.wire", "executor.runner",
    "executor.runner.protocol", "executor.runner.grades", "executor.runner.bindings", "executor.stages"})
# What a runtime's environment holds besides the standard library (runtimes/*.txt).
RUNTIME_LIBRARIES = frozenset({"jax", "jaxlib", "numpy", "matplotlib"})
# web/'s shell: the modules that assemble the apps (routes, the ASGI application, the OpenAPI
# document) and the settings, which name apps as strings. The rest of web/ is their library.
WEB_SHELL = frozenset({"web.asgi", "web.urls", "web.openapi", "web.settings", "web.celery"})


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@functools.cache
def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" not in path.parts:
                found[module_name(path)] = path
    return found


def imported_names(path: Path):
    """(dotted name, line) for each import in the file, relative ones made absolute. Files that
    are not Python (an example in IPython's syntax) have none."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except SyntaxError:
        return
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                yield (base if alias.name == "*" else f"{base}.{alias.name}"), node.lineno


def resolve(name: str) -> str | None:
    """The project module an import names (``from x import y`` names ``x.y``, a module or a name
    in ``x``), or None for a library."""
    while name and name not in modules():
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def graph() -> dict[str, list[tuple[str, str, int]]]:
    """module -> [(imported name, the project module it resolves to or "", line)]."""
    edges = {}
    for name, path in modules().items():
        edges[name] = [(imported, resolve(imported) or "", line) for imported, line in imported_names(path)]
    return edges


def where(module: str, line: int) -> str:
    return f"{modules()[module].relative_to(ROOT)}:{line}"


def top(name: str) -> str:
    return name.split(".")[0]


def test_the_web_side_imports_only_the_executors_shared_modules():
    wrong = [f"{where(m, line)} imports {target}" for m, edges in graph().items() if top(m) in WEB_SIDE
             for _, target, line in edges if top(target) == "executor" and target not in SHARED]
    assert not wrong, "the web side reaches the executor's worker side:\n" + "\n".join(wrong)


def test_the_executors_shared_modules_import_nothing_else_of_the_executor_and_no_jax():
    wrong = [f"{where(m, line)} imports {imported}" for m in SHARED for imported, target, line in graph()[m]
             if (target and target not in SHARED) or top(imported) in RUNTIME_LIBRARIES]
    assert not wrong, "a shared module pulls the worker side (or jax) into the web:\n" + "\n".join(wrong)


def test_the_runner_imports_itself_the_standard_library_and_the_runtimes_libraries_only():
    wrong = []
    for m, edges in graph().items():
        if not m.startswith("executor.runner"):
            continue
        for imported, target, line in edges:
            if target:
                if not target.startswith("executor.runner"):
                    wrong.append(f"{where(m, line)} imports {target}")
            elif top(imported) not in sys.stdlib_module_names and top(imported) not in RUNTIME_LIBRARIES:
                wrong.append(f"{where(m, line)} imports {imported}")
    assert not wrong, "the runner, which runs in the sandbox, reaches outside it:\n" + "\n".join(wrong)


def test_the_executor_imports_no_app_and_no_django():
    wrong = [f"{where(m, line)} imports {imported}" for m, edges in graph().items() if top(m) == "executor"
             for imported, _, line in edges if top(imported) in WEB_SIDE + ("django", "channels", "daphne")]
    assert not wrong, "the executor holds no database credentials or settings:\n" + "\n".join(wrong)


def test_webs_library_imports_no_app_only_its_shell_points_up():
    wrong = [f"{where(m, line)} imports {target}" for m, edges in graph().items()
             if top(m) == "web" and m not in WEB_SHELL
             for _, target, line in edges if top(target) in APPS]
    assert not wrong, "web/'s library knows no app (name it in settings, or move it):\n" + "\n".join(wrong)


# The whiteboard.

@functools.cache
def whiteboard() -> dict:
    return json.loads((ROOT / "docs" / "architecture.json").read_text())


def part_of(path: str) -> str | None:
    """The part that holds a file: the one whose longest prefix matches (the schema's files lie
    inside the runner and the executor, the template inside the runner)."""
    best, length = None, -1
    for part, drawn in whiteboard()["parts"].items():
        for prefix in drawn["is"]:
            if (path == prefix or (prefix.endswith("/") and path.startswith(prefix))) and len(prefix) > length:
                best, length = part, len(prefix)
    return best


FRONTEND_IMPORT = re.compile(r"""(?:from|import)\s*["'](\.{1,2}/[^"']+)["']""")


def frontend_edges():
    """(file, imported file, line) for the front end's relative imports of its own modules."""
    for path in (ROOT / "frontend" / "src").rglob("*.ts"):
        text = path.read_text()
        for match in FRONTEND_IMPORT.finditer(text):
            target = (path.parent / match.group(1)).resolve()
            if target.suffix != ".ts":
                target = target.with_name(target.name + ".ts")
            if target.exists():
                yield path, target, text.count("\n", 0, match.start()) + 1


def arrows_found() -> dict[tuple[str, str], list[str]]:
    found = defaultdict(list)
    for m, edges in graph().items():
        source = part_of(str(modules()[m].relative_to(ROOT)))
        for _, target, line in edges:
            if target:
                dest = part_of(str(modules()[target].relative_to(ROOT)))
                if source and dest and source != dest:
                    found[(source, dest)].append(where(m, line))
    for path, target, line in frontend_edges():
        source, dest = part_of(str(path.relative_to(ROOT))), part_of(str(target.relative_to(ROOT)))
        if source and dest and source != dest:
            found[(source, dest)].append(f"{path.relative_to(ROOT)}:{line}")
    return found


def test_every_arrow_between_parts_is_drawn_and_no_never_is_crossed():
    drawn = {tuple(arrow) for arrow in whiteboard()["arrows"]}
    never = {(a, b): why for a, b, why in whiteboard()["never"]}
    found = arrows_found()
    crossed = [f"{a} → {b} ({never[(a, b)]}): {', '.join(found[(a, b)][:3])}" for a, b in found if (a, b) in never]
    undrawn = [f"{a} → {b}: {', '.join(found[(a, b)][:3])}" for a, b in found
               if (a, b) not in drawn and (a, b) not in never]
    assert not crossed, "a wall is broken:\n" + "\n".join(crossed)
    assert not undrawn, "an arrow the whiteboard does not draw (draw it, or mend it):\n" + "\n".join(undrawn)


def test_every_drawn_arrow_is_in_the_code():
    found = arrows_found()
    missing = [f"{a} → {b}" for a, b in whiteboard()["arrows"] if (a, b) not in found]
    assert not missing, "the whiteboard draws arrows the code no longer has:\n" + "\n".join(missing)


def test_no_module_imports_itself_around_a_loop():
    """Strongly connected parts of the import graph (Tarjan's), counting every import."""
    graph_ = {m: sorted({t for _, t, _ in edges if t and t != m}) for m, edges in graph().items()}
    index, low, stack, on_stack, loops = {}, {}, [], set(), []

    def visit(v):
        # Iterative, so a deep graph needs no recursion limit.
        work = [(v, iter(graph_[v]))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph_[w])))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        loops.append(sorted(component))

    for v in graph_:
        if v not in index:
            visit(v)
    assert not loops, "modules that import each other around a loop:\n" + "\n".join(map(str, loops))
