"""The names each top-level statement of a snippet binds, read with ``ast`` alone: the runner's
shapes give each name the line that last assigned it, the editor's lint (``playground/actions/
lint.py``) the line that first did. The standard library only, so the web side may import it (the
one runner module it does besides the protocol and the grades)."""

from __future__ import annotations

import ast


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
