"""The runner's own modules, out of the snippet's reach by name: done once by the runner template
(runner/template.py), whose runners are forked with their modules hidden already, or, where a
runner is started on its own (``python -m executor.runner``, no template), once it knows it will
run a snippet (a run's or a notebook session's), before the first line of the snippet runs.

    before                                      after
    sys.modules["runner.answers"]               sys.modules["<runner 5f0c...>.answers"]
    sys.path[0] = the folder holding runner/    gone
    import runner.answers                       ModuleNotFoundError (a finder first on
    import executor.runner.answers              sys.meta_path refuses both spellings)

The modules are renamed, not dropped: the runner's own relative imports (``from .explain import
...`` inside a function, matplotlib's backend named in ``MPLBACKEND``) resolve against the new
package name, so the runner keeps working; the name is not an identifier and differs per
template (each renaming in the runners would cost each of them a millisecond of copied pages), so
no ``import`` statement spells it.

This raises the bar; it is no wall. Code in the same process can still find these modules among
``sys.modules``' values or with ``gc``: which is why the answering code holds what it calls in
closures built before the snippet runs (``answers.server``), and why docs/CHECKS.md says which
verdicts rest on the student's side's word. ``jaxplay`` stays importable: it is the snippet's.
"""

from __future__ import annotations

import importlib.abc
import os
import sys

# The names the runner's package is known by: as bound into the sandbox (``python -m runner``)
# and as the project's folder (``python -m executor.runner``, the unsandboxed development launcher).
SPELLINGS = ("runner", "executor.runner")


class RefuseRunner(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: the runner's package, under any name it was known by, is not
    found, even where a snippet puts its folder back on ``sys.path``."""

    def __init__(self, names):
        self.names = tuple(names)

    def find_spec(self, fullname, path, target=None):
        if any(fullname == name or fullname.startswith(name + ".") for name in self.names):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def hide(package: str) -> str:
    """Rename ``package`` (this runner's, e.g. "runner") and its loaded submodules in
    ``sys.modules`` to a name no import statement can spell, drop its folder from ``sys.path``
    and refuse its names from now on. Returns the new name. Idempotent per process."""
    if package not in sys.modules or package.startswith("<runner "):
        return package  # done already (by the template, or for a session's earlier cell)
    hidden = f"<runner {os.urandom(6).hex()}>"
    top = sys.modules[package]
    # Compared without touching the disk: a realpath of each entry cost about 20 ms a run (0.5 ms so).
    roots = set()
    for folder in getattr(top, "__path__", ()):
        root = os.path.abspath(os.path.join(folder, *[os.pardir] * len(package.split("."))))
        roots |= {root, os.path.realpath(root)}
    for name in [n for n in list(sys.modules) if n == package or n.startswith(package + ".")]:
        module = sys.modules.pop(name)
        new = hidden + name[len(package):]
        sys.modules[new] = module
        # Relative imports read __package__ (and a fromlist the package's __name__): both follow.
        module.__name__ = new
        module.__package__ = new if name == package else new.rpartition(".")[0]
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.name = new
    parent, _, child = package.rpartition(".")
    if parent and parent in sys.modules and getattr(sys.modules[parent], child, None) is top:
        delattr(sys.modules[parent], child)  # executor.runner, reached as an attribute of executor
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) not in roots]
    for folder in list(sys.path_importer_cache):
        if isinstance(folder, str) and os.path.abspath(folder or os.curdir) in roots:
            del sys.path_importer_cache[folder]
    sys.meta_path.insert(0, RefuseRunner({package, *SPELLINGS}))
    _rename_backend(package, hidden)
    return hidden


def _rename_backend(package: str, hidden: str) -> None:
    """matplotlib imports the runner's figure backend by name when the snippet first draws."""
    old, new = f"module://{package}.mpl_backend", f"module://{hidden}.mpl_backend"
    if os.environ.get("MPLBACKEND") == old:
        os.environ["MPLBACKEND"] = new
    matplotlib = sys.modules.get("matplotlib")
    if matplotlib is None:
        return
    try:  # imported already (the template preloads pyplot): it read the old name then
        params = matplotlib.rcParams
        if dict.get(params, "backend") == old:
            dict.__setitem__(params, "backend", new)
    except Exception:  # noqa: BLE001 - only figures: a matplotlib that keeps rcParams otherwise
        pass
