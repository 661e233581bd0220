"""The names each top-level statement of a snippet binds, read with ``ast`` alone: the runner's
shapes give each name the line that last assigned it, the editor's lint (``playground/actions/
lint.py``) the line that first did; and what a notebook's cell binds and reads (``cell_names``:
the notebook page's stale cells). The standard library only, so the web side may import it (the
one runner module it does besides the protocol and the grades)."""

from __future__ import annotations

import ast
import builtins
import re


def bindings(source: str) -> list[tuple[str, int]]:
    """``(name, line)`` for each name a top-level statement binds (assignments, imports, defs,
    ``for`` and ``with`` targets, ``except … as``), in the order of the statements; the editor's
    lint reads the first binding of a name, the shapes the last."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [(name, node.lineno) for node in tree.body for name in sorted(_bound_by(node))]


def _bound_by(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, (ast.Store, ast.Del)):
            names.add(child.id)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(child.name)
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in child.names)
        elif isinstance(child, ast.ExceptHandler) and child.name:
            names.add(child.name)
    return names


# A cell's names: what it binds for the cells after it, and what it reads that a cell before it
# may have bound. A notebook page marks a cell stale when a cell it reads from ran again since.

_BUILTINS = frozenset(dir(builtins))
_FUNCTION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSION = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# A magic line (IPython's: ``%timeit f(x)``, ``x = %time f(y)``, ``!pip list``, ``%%time``), as
# the runner's notebook transformation finds them; read only when the cell is not Python as it is.
_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:(?P<target>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*)\s*=\s*)?"
                    r"(?P<sigil>%%|%|!)(?P<rest>.*)$")
_TIMED = re.compile(r"^(?:time|timeit)\b\s*(?:-[A-Za-z](?:\s*\d+)?\s+)*(?P<expr>.*)$")


def cell_names(source: str) -> tuple[list[str], list[str], str | None]:
    """``(defines, uses, error)`` of a notebook cell, each list sorted. ``defines``: the names its
    top-level statements bind (assignments, augmented and tuple targets, imports, ``def`` and
    ``class``, ``for``/``with``/``except`` targets, ``del``, and a function's ``global`` names).
    ``uses``: the global names it reads that it has not bound before reading them (a name read
    and then bound, as ``x += 1``, is both), the bodies of its functions included (they read
    globals when called: a name the cell binds anywhere is its own there), builtins left out.
    A cell that does not parse: empty lists and the parser's words."""
    try:
        tree = _parse(source)
    except SyntaxError as exc:
        return [], [], f"line {exc.lineno}: {exc.msg}" if exc.lineno else str(exc.msg)
    except (ValueError, RecursionError, MemoryError) as exc:
        return [], [], f"the cell cannot be read: {type(exc).__name__}"
    names = _CellNames()
    try:
        for statement in tree.body:
            names.visit(statement)
        names.settle()
    except RecursionError:
        return [], [], "the cell is nested too deeply to read"
    return sorted(names.defines), sorted(names.uses - _BUILTINS), None


def _parse(source: str) -> ast.Module:
    """The cell as Python, else with its IPython magic lines made plain Python (a timed
    expression kept, any other magic a ``pass``)."""
    try:
        return ast.parse(source)
    except SyntaxError:
        plain = "\n".join(_plain_line(line) for line in source.splitlines())
        if plain == "\n".join(source.splitlines()):
            raise
    return ast.parse(plain)  # its error, if any, is on a line past the magics


def _plain_line(line: str) -> str:
    match = _MAGIC.match(line)
    if match is None:
        return line
    indent, target, sigil = match["indent"], match["target"], match["sigil"]
    timed = _TIMED.match(match["rest"]) if sigil == "%" else None
    value = timed["expr"].strip() if timed and timed["expr"].strip() else None
    if target:
        return f"{indent}{target} = {value or 'None'}"
    return f"{indent}{value or 'pass'}"


class _CellNames:
    """Reads a cell's top-level statements in the order they run. ``local`` is the stack of
    scopes that run at once inside the cell (a class body, a comprehension): what binds there
    is theirs, not the cell's. Functions run later: their bodies are read once the cell's own
    bindings are all known (``settle``)."""

    def __init__(self):
        self.bound: set[str] = set()
        self.defines: set[str] = set()
        self.uses: set[str] = set()
        self.local: list[set[str]] = []
        self.later: list[tuple[ast.AST, frozenset[str]]] = []  # (function, the names it sees)

    def read(self, name: str) -> None:
        if not any(name in scope for scope in self.local) and name not in self.bound:
            self.uses.add(name)

    def bind(self, name: str) -> None:
        if self.local:
            self.local[-1].add(name)
        else:
            self.bound.add(name)
            self.defines.add(name)

    def visit(self, node: ast.AST | None) -> None:
        if node is None:
            return
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node)
        else:
            self.visit_all(ast.iter_child_nodes(node))

    def visit_all(self, nodes) -> None:
        for node in nodes:
            self.visit(node)

    def settle(self) -> None:
        for function, seen in self.later:
            reads, writes = _function_globals(function, seen)
            self.uses |= reads - self.bound
            self.defines |= writes
            self.bound |= writes


def _name(names: _CellNames, node: ast.Name) -> None:
    if isinstance(node.ctx, ast.Load):
        names.read(node.id)
    elif isinstance(node.ctx, ast.Del):
        names.read(node.id)  # deleting reads the binding there was, then the cell changed it
        names.bind(node.id)
    else:
        names.bind(node.id)


def _assign(names: _CellNames, node: ast.Assign | ast.AnnAssign) -> None:
    names.visit(node.value)
    if isinstance(node, ast.AnnAssign):
        names.visit(node.annotation)
        if node.value is None:
            return  # ``x: int`` binds nothing
    names.visit_all(node.targets if isinstance(node, ast.Assign) else [node.target])


def _aug_assign(names: _CellNames, node: ast.AugAssign) -> None:
    names.visit(node.value)
    target = node.target
    if isinstance(target, ast.Name):
        names.read(target.id)
        names.bind(target.id)
    else:
        names.visit(target)


def _named(names: _CellNames, node: ast.NamedExpr) -> None:
    names.visit(node.value)
    # A walrus in a comprehension binds in the scope around it.
    outer, names.local = names.local, [scope for scope in names.local if not isinstance(scope, _Scope)]
    names.bind(node.target.id)
    names.local = outer


def _for(names: _CellNames, node: ast.For | ast.AsyncFor) -> None:
    names.visit(node.iter)
    names.visit(node.target)
    names.visit_all(node.body)
    names.visit_all(node.orelse)


class _Scope(set):
    """A comprehension's own names (its targets)."""


def _comprehension(names: _CellNames, node) -> None:
    first, *rest = node.generators
    names.visit(first.iter)  # the first iterable is read in the scope around it
    names.local.append(_Scope())
    try:
        names.visit(first.target)
        names.visit_all(first.ifs)
        for generator in rest:
            names.visit(generator.iter)
            names.visit(generator.target)
            names.visit_all(generator.ifs)
        names.visit_all([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
    finally:
        names.local.pop()


def _function(names: _CellNames, node) -> None:
    """A ``def`` or ``lambda``: its decorators, defaults and annotations are read now; its body
    when called."""
    names.visit_all(getattr(node, "decorator_list", []))
    names.visit_all(node.args.defaults)
    names.visit_all(node.args.kw_defaults)
    if not isinstance(node, ast.Lambda):
        names.visit_all(arg.annotation for arg in _arguments(node.args))
        names.visit(node.returns)
        names.bind(node.name)
    # A lambda in a comprehension sees its targets; a method does not see its class's names.
    seen = frozenset().union(*(scope for scope in names.local if isinstance(scope, _Scope)))
    names.later.append((node, seen))


def _class(names: _CellNames, node: ast.ClassDef) -> None:
    names.visit_all(node.decorator_list)
    names.visit_all(node.bases)
    names.visit_all(node.keywords)
    names.local.append(set())
    try:
        names.visit_all(node.body)
    finally:
        names.local.pop()
    names.bind(node.name)


def _import(names: _CellNames, node: ast.Import | ast.ImportFrom) -> None:
    for alias in node.names:
        if alias.name != "*":  # a star import's names are not known without running it
            names.bind(alias.asname or alias.name.split(".")[0])


def _handler(names: _CellNames, node: ast.ExceptHandler) -> None:
    names.visit(node.type)
    if node.name:
        names.bind(node.name)
    names.visit_all(node.body)


def _pattern_capture(names: _CellNames, node) -> None:
    names.visit_all(ast.iter_child_nodes(node))
    captured = node.rest if isinstance(node, ast.MatchMapping) else node.name
    if captured:
        names.bind(captured)


def _global(names: _CellNames, node: ast.Global | ast.Nonlocal) -> None:
    """At the top level a ``global`` statement changes nothing."""


_HANDLERS = {
    ast.Name: _name, ast.Assign: _assign, ast.AnnAssign: _assign, ast.AugAssign: _aug_assign,
    ast.NamedExpr: _named, ast.For: _for, ast.AsyncFor: _for,
    ast.ListComp: _comprehension, ast.SetComp: _comprehension, ast.GeneratorExp: _comprehension,
    ast.DictComp: _comprehension, ast.FunctionDef: _function, ast.AsyncFunctionDef: _function,
    ast.Lambda: _function, ast.ClassDef: _class, ast.Import: _import, ast.ImportFrom: _import,
    ast.ExceptHandler: _handler, ast.MatchAs: _pattern_capture, ast.MatchStar: _pattern_capture,
    ast.MatchMapping: _pattern_capture, ast.Global: _global, ast.Nonlocal: _global,
}


def _arguments(args: ast.arguments) -> list[ast.arg]:
    return [*args.posonlyargs, *args.args, *([args.vararg] if args.vararg else []), *args.kwonlyargs,
            *([args.kwarg] if args.kwarg else [])]


def _function_globals(node, enclosing: frozenset[str]) -> tuple[set[str], set[str]]:
    """(global names read, global names bound) by a function's body when it runs: names it reads
    that are neither its own (parameters, names it binds without declaring them ``global``) nor
    an enclosing function's; and those it declares ``global`` and binds."""
    body = [node.body] if isinstance(node, ast.Lambda) else node.body
    declared, stored, nested = set(), {arg.arg for arg in _arguments(node.args)}, []
    loads: set[str] = set()
    for child in _own_nodes(body, nested):
        if isinstance(child, (ast.Global, ast.Nonlocal)):
            (declared.update(child.names) if isinstance(child, ast.Global) else stored.update(child.names))
        elif isinstance(child, ast.Name):
            (loads if isinstance(child.ctx, ast.Load) else stored).add(child.id)
        else:
            stored.update(_bound_here(child))
    own = stored - declared
    reads = {name for name in loads if name not in own and name not in enclosing}
    writes = stored & declared
    for inner in nested:
        inner_reads, inner_writes = _function_globals(inner, frozenset(enclosing | own))
        reads |= inner_reads
        writes |= inner_writes
    return reads, writes


def _bound_here(node: ast.AST) -> set[str]:
    """The names a node other than a ``Name`` binds in the scope it is in."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    if isinstance(node, ast.ExceptHandler) and node.name:
        return {node.name}
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return {node.name}
    if isinstance(node, ast.MatchMapping) and node.rest:
        return {node.rest}
    return set()


def _own_nodes(nodes, nested: list):
    """Every node under ``nodes`` that runs in their function's scope; a nested function's
    decorators and defaults do, its body is put in ``nested`` (its names are its own)."""
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _FUNCTION):
            nested.append(node)
            outside = [*getattr(node, "decorator_list", []), *node.args.defaults,
                       *(d for d in node.args.kw_defaults if d is not None)]
            stack.extend(reversed(outside))
        else:
            stack.extend(reversed(list(ast.iter_child_nodes(node))))
