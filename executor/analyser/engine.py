"""Completion, signatures and hover for one editor's code, with jedi, in this process's
environment. The code is parsed, never run: jedi imports only libraries that are installed (to
read compiled modules), never the code's own statements.

Positions are Monaco's: ``line`` and ``column`` count from 1, ``column`` is the cursor's (the
character before it is the last one typed)."""

from __future__ import annotations

import re

import jedi

from .wire import as_python

# What goes back, bounded: a module's members are hundreds; docs are cut.
MAX_ITEMS = 200
DOC_CHARS = 1500
DETAIL_DOC_LINES = 6
SIGNATURE_CHARS = 300
DOCS_BASE = "https://docs.jax.dev/en/latest/_autosummary/"
# The public modules a jax name's page is under: jax._src.numpy.einsum.einsum is jax.numpy.einsum.
PUBLIC_PREFIXES = ("jax.numpy", "jax.lax", "jax.random", "jax.nn", "jax.scipy", "jax.tree", "jax.tree_util",
                   "jax.sharding", "jax.experimental", "jax.image", "jax.ops", "jax.dtypes", "jax.debug",
                   "jax.export", "jax.profiler", "jax.stages", "jax")

_environment = None
_project = None


def project():
    """What jedi may read: the libraries' own directories (the standard library, site-packages),
    never the node's other files. The code's own ``sys.path`` changes are not followed (jedi
    would otherwise list and read any directory the code names), and the folder jedi takes for
    the project is an empty one."""
    global _project
    if _project is None:
        import sys
        import tempfile

        from jedi.inference import sys_path as jedi_sys_path

        jedi_sys_path.check_sys_path_modifications = lambda module_context: []
        prefixes = (sys.base_prefix, sys.prefix)
        libraries = [p for p in sys.path
                     if p and ("site-packages" in p or "dist-packages" in p or p.startswith(prefixes))]
        _project = jedi.Project(tempfile.mkdtemp(prefix="analyser-"), sys_path=libraries, smart_sys_path=False,
                                load_unsafe_extensions=False)
    return _project


def environment():
    """This process's own interpreter: compiled modules are read here, not in a further process."""
    global _environment
    if _environment is None:
        _environment = jedi.InterpreterEnvironment()
    return _environment


def _script(code: str):
    source, shifts = as_python(code)
    return jedi.Script(source, environment=environment(), project=project()), shifts


def _position(line: int, column: int, shifts: dict[int, int], code: str) -> tuple[int, int] | None:
    lines = code.split("\n")
    if not 1 <= line <= len(lines):
        return None
    column = max(column - 1 - shifts.get(line, 0), 0)  # jedi's columns count from 0
    source_line = as_python(lines[line - 1])[0]
    return line, min(column, len(source_line))


def first_lines(doc: str, n: int) -> str:
    return "\n".join(doc.strip().split("\n")[:n])[:DOC_CHARS]


def public_name(full_name: str | None) -> str | None:
    """``jax._src.numpy.einsum.einsum`` → ``jax.numpy.einsum`` when the last part is reachable
    from a public module the same way; None for a name outside jax."""
    if not full_name or not (full_name == "jax" or full_name.startswith("jax.")):
        return None
    if "._src." not in full_name and not full_name.startswith("jax._src"):
        return full_name
    return None


def docs_url(full_name: str | None, module_hint: str | None = None) -> str | None:
    name = public_name(full_name) or (module_hint if module_hint and module_hint.startswith("jax") else None)
    return f"{DOCS_BASE}{name}.html" if name else None


def _signature_text(definition) -> str:
    try:
        signatures = definition.get_signatures()
    except Exception:  # noqa: BLE001 - jedi fails on some compiled objects; no signature then
        return ""
    return signatures[0].to_string()[:SIGNATURE_CHARS] if signatures else ""


def complete(code: str, line: int, column: int) -> dict:
    script, shifts = _script(code)
    position = _position(line, column, shifts, code)
    if position is None:
        return {"items": []}
    # Never the node's files: jedi completes paths inside a string ('/etc/...'), which would list
    # the executor's file system to anyone typing.
    completions = [c for c in script.complete(*position) if c.type != "path"]
    items = []
    for c in completions[:MAX_ITEMS]:
        items.append({"label": c.name, "kind": c.type, "insert": c.complete, "prefix": len(c.name) - len(c.complete),
                      "module": c.module_name or ""})
    # Details (signature, first lines of the doc) for the first ones only: the rest the page asks
    # for when they are selected, through hover's "resolve" (details cost a lot each).
    for item, c in zip(items[:20], completions[:20], strict=False):
        item.update(_details(c))
    return {"items": items, "more": len(completions) > MAX_ITEMS}


def _details(definition) -> dict:
    try:
        doc = definition.docstring(raw=True)
    except Exception:  # noqa: BLE001 - as above
        doc = ""
    return {"signature": _signature_text(definition), "doc": first_lines(doc, DETAIL_DOC_LINES),
            "full_name": definition.full_name or ""}


def resolve(code: str, line: int, column: int, label: str) -> dict:
    """The details of one completion (its signature and doc), asked for when it is selected."""
    script, shifts = _script(code)
    position = _position(line, column, shifts, code)
    if position is None:
        return {}
    for c in script.complete(*position):
        if c.name == label and c.type != "path":
            return _details(c)
    return {}


def signatures(code: str, line: int, column: int) -> dict:
    script, shifts = _script(code)
    position = _position(line, column, shifts, code)
    if position is None:
        return {"signatures": []}
    found = []
    for s in script.get_signatures(*position)[:5]:
        try:
            doc = s.docstring(raw=True)
        except Exception:  # noqa: BLE001 - as above
            doc = ""
        params = []
        for p in s.params[:40]:
            text = p.to_string()[:120]
            params.append({"label": text, "name": p.name})
        found.append({"label": s.to_string()[:SIGNATURE_CHARS * 2], "params": params, "index": s.index,
                      "doc": first_lines(doc, 12), "full_name": s.full_name or ""})
    return {"signatures": found}


def hover(code: str, line: int, column: int) -> dict:
    script, shifts = _script(code)
    position = _position(line, column, shifts, code)
    if position is None:
        return {}
    names = script.help(*position) or script.infer(*position)
    for name in names[:1]:
        try:
            doc = name.docstring(raw=True)
        except Exception:  # noqa: BLE001 - as above
            doc = ""
        full_name = name.full_name or ""
        if not doc and not full_name:
            return {}
        hint = None
        if full_name.startswith("jax._src"):
            hint = _public_for(code, line, column, name.name)
        return {"name": name.name, "full_name": full_name, "kind": name.type,
                "signature": _signature_text(name), "doc": doc.strip()[:DOC_CHARS * 4],
                "docs_url": docs_url(full_name, hint)}
    return {}


def _public_for(code: str, line: int, column: int, leaf: str) -> str | None:
    """The dotted name as the code writes it (``jnp.einsum``), with its alias resolved
    (``jax.numpy.einsum``): the name the docs file its page under."""
    text = code.split("\n")[line - 1]
    start = end = max(column - 1, 0)
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "._"):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    dotted = text[start:end]
    if "." not in dotted:
        return None
    head, _, rest = dotted.partition(".")
    alias = re.search(rf"^\s*import\s+([\w.]+)\s+as\s+{re.escape(head)}\s*$", code, re.M)
    module = alias.group(1) if alias else head
    public = f"{module}.{rest}"
    return public if public.startswith("jax") and public.endswith(leaf) else None


def warm_steps() -> list:
    """What first requests would pay, in steps: each module's whole member list (its first
    listing costs seconds of CPU: jax. 2.4 s, np. 6 s), a few prefixes, an array's attributes,
    common signatures and docs."""
    code = ("import jax\nimport jax.numpy as jnp\nimport numpy as np\nimport optax\nfrom flax import nnx\n"
            "x = jnp.ones((3, 3))\n")
    steps = []
    for tail in ("jnp.ein", "jax.", "jnp.", "jax.random.", "jax.lax.", "jax.nn.", "x.", "optax.", "np.", "nnx.",
                 "jax.random.nor", "jax.lax.sc", "optax.ad", "np.lin", "x.sh", "nnx.Li"):
        full = code + tail
        steps.append(lambda full=full, tail=tail: complete(full, full.count("\n") + 1, len(tail) + 1))
    steps.append(lambda: signatures(code + "jnp.einsum(", 7, 12))
    steps.append(lambda: signatures(code + "jax.random.normal(", 7, 19))
    for name in ("jnp.einsum", "jax.jit", "jax.grad", "jax.vmap", "jnp.ones", "optax.adam", "np.array"):
        steps.append(lambda name=name: hover(code + name, 7, len(name)))
    return steps


def import_libraries() -> None:
    import importlib

    for module in ("numpy", "jax", "jax.numpy", "optax", "flax", "flax.nnx"):
        try:
            importlib.import_module(module)
        except ImportError:
            pass


def warm() -> None:
    """The libraries imported and every step of ``warm_steps`` taken."""
    import_libraries()
    for step in warm_steps():
        try:
            step()
        except Exception:  # noqa: BLE001 - a step that fails leaves that part cold, nothing else
            pass
