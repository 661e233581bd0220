"""The texts and figures of one compilation as the Compiled pane shows them: the jaxpr and the
optimised HLO with each line mapped to the snippet's line, the StableHLO, XLA's cost analysis
and memory figures; each text capped, and all of them within the run's budget for code."""

from __future__ import annotations

import re

from . import common, jaxcompat, profile

SNIPPET = common.SNIPPET_FILENAME


_SRC_COMMENT = re.compile(r"\s+#(?: (.+?):(\d+)(?::\d+)? \((.*)\))?\s*$")


def jaxpr_text(jaxpr) -> tuple[str, list]:
    """The jaxpr as ``jax.make_jaxpr`` prints it, and for each of its lines the snippet line that
    produced it (or None)."""
    try:
        annotated = jaxpr.pretty_print(source_info=True, name_stack=False)
        first = annotated.split("\n", 1)[0]
        m = _SRC_COMMENT.search(first)
        body = first[: m.start()] if m else first
        if " let " in body and body.rstrip().endswith("}"):
            # A small jaxpr fits on one line; one equation per line reads (and diffs) better.
            annotated = jaxpr.pretty_print(source_info=True, name_stack=False,
                                           width=max(len(body.rstrip()) - 1, 20))
    # A jaxpr prints its parameters, user objects among them, whose repr may raise anything.
    except Exception:  # noqa: BLE001
        return str(jaxpr), []
    lines, where = [], []
    for line in annotated.split("\n"):
        m = _SRC_COMMENT.search(line)
        if m:
            lines.append(line[: m.start()].rstrip())
            where.append(int(m.group(2)) if m.group(1) == SNIPPET else None)
        else:
            lines.append(line.rstrip())
            where.append(None)
    return "\n".join(lines), where


_HLO_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_STACK_FRAME = re.compile(r",? ?stack_frame_id=(\d+)")


def hlo_text(text: str) -> tuple[str, list]:
    """Optimised HLO with XLA's stack-frame tables taken out (they name the runner's own files);
    each op's ``stack_frame_id`` becomes a line mapping to the snippet instead."""
    if "StackFrames" not in text:
        return text, []
    out, tables = _take_stack_tables(text)
    while len(out) > 1 and not out[0].strip() and not out[1].strip():
        out.pop(0)
    lines, where = [], []
    for line in out:
        m = _STACK_FRAME.search(line)
        where.append(tables.snippet_line(int(m.group(1))) if m else None)
        lines.append(_STACK_FRAME.sub("", line) if m else line)
    # Collapse the blank lines the removed tables leave behind.
    text_lines, text_where = [], []
    for line, w in zip(lines, where):
        if not line.strip() and text_lines and not text_lines[-1].strip():
            continue
        text_lines.append(line)
        text_where.append(w)
    return "\n".join(text_lines), text_where


class _StackTables:
    """XLA's stack-frame tables of one HLO text: file names, file locations, and frames (each a
    location and its parent frame)."""

    def __init__(self):
        self.files: dict[int, str] = {}
        self.locations: dict[int, tuple[int, int]] = {}
        self.frames: dict[int, tuple[int, int]] = {}

    def add(self, section: str, ident: int, rest: str) -> None:
        """One row of a table."""
        if section == "FileNames":
            self.files[ident] = rest.strip().strip('"')
        elif section == "FileLocations":
            m_file = re.search(r"file_name_id=(\d+)", rest)
            m_line = re.search(r"\bline=(\d+)", rest)
            if m_file and m_line:
                self.locations[ident] = (int(m_file.group(1)), int(m_line.group(1)))
        elif section == "StackFrames":
            m_loc = re.search(r"file_location_id=(\d+)", rest)
            m_parent = re.search(r"parent_frame_id=(\d+)", rest)
            if m_loc:
                self.frames[ident] = (int(m_loc.group(1)), int(m_parent.group(1)) if m_parent else 0)

    def snippet_line(self, frame_id: int) -> int | None:
        """The snippet's line a frame comes from: the first frame of the snippet's, walking from
        this one out to its callers (None when no frame is the snippet's)."""
        seen = set()
        while frame_id in self.frames and frame_id not in seen:
            seen.add(frame_id)
            loc, parent = self.frames[frame_id]
            file_id, line = self.locations.get(loc, (None, None))
            if self.files.get(file_id) == SNIPPET:
                return line
            frame_id = parent
        return None


def _take_stack_tables(text: str) -> tuple[list[str], _StackTables]:
    """The HLO text's lines without its stack-frame tables, and the tables."""
    tables = _StackTables()
    out: list[str] = []
    section = None
    for line in text.split("\n"):
        if line in _HLO_SECTIONS:
            section = line
            continue
        if section:
            if not line.strip():
                section = None
                continue
            ident, _, rest = line.partition(" ")
            try:
                ident = int(ident)
            except ValueError:
                section = None
                out.append(line)
                continue
            tables.add(section, ident, rest)
            continue
        out.append(line)
    return out, tables


def cost(executable) -> dict:
    out: dict = {}
    try:
        cost = executable.cost_analysis()
        if isinstance(cost, (list, tuple)):
            cost = cost[0] if cost else {}
        if cost:
            for src, dst in (("flops", "flops"), ("transcendentals", "transcendentals"),
                             ("bytes accessed", "bytes_accessed"),
                             ("optimal_seconds", "optimal_seconds")):
                if src in cost and cost[src] is not None:
                    value = float(cost[src])
                    out[dst] = int(value) if value.is_integer() and dst != "optimal_seconds" else value
    except (NotImplementedError, RuntimeError, TypeError, ValueError):
        pass  # a backend without a cost model raises (XlaRuntimeError is a RuntimeError)
    return out


def memory(executable) -> dict | None:
    try:
        m = executable.get_compiled_memory_stats()
    except (AttributeError, NotImplementedError, RuntimeError):  # not on every backend
        return None
    out = {}
    for src, dst in (("argument_size_in_bytes", "argument_bytes"),
                     ("output_size_in_bytes", "output_bytes"),
                     ("temp_size_in_bytes", "temp_bytes"),
                     ("alias_size_in_bytes", "alias_bytes"),
                     ("generated_code_size_in_bytes", "generated_code_bytes"),
                     ("peak_memory_in_bytes", "peak_bytes")):
        value = getattr(m, src, None)
        if isinstance(value, int) and value >= 0:
            out[dst] = value
    return out or None


def texts(jaxpr, computation, executable) -> dict:
    fields: dict = {}
    truncated = []

    def put(name: str, text: str | None, where: list | None = None):
        text, cut = common.cap_text(text)
        if text is None:
            fields[name] = None
            return
        if not common.outbox.take_text_budget(len(text)):
            fields[name] = (f"[not sent: this run has already sent "
                            f"{common.human_bytes(common.TEXT_BUDGET_BYTES)} of compiled code]")
            truncated.append(name)
            return
        fields[name] = text
        if cut:
            truncated.append(name)
        if where is not None:
            fields[name + "_lines"] = where[: text.count("\n") + 1]

    put("jaxpr", *jaxpr_text(jaxpr))  # jaxpr_text falls back to str() itself
    try:
        put("stablehlo", jaxcompat.stablehlo_text(computation))
    # JAX's private MLIR helpers: whatever they raise is shown in the pane, not swallowed.
    except Exception as exc:  # noqa: BLE001
        fields["stablehlo"] = f"[StableHLO unavailable: {exc}]"
    try:
        raw = executable.as_text()
        profile.note_hlo(raw)  # a profiled run's op kinds, by instruction
        text, where = hlo_text(raw)
        put("hlo", text, where)
    # Backends differ in what they can print: whatever they raise is shown in the pane.
    except Exception as exc:  # noqa: BLE001
        fields["hlo"] = f"[optimised HLO unavailable on this backend: {exc}]"
    fields["truncated"] = truncated
    return fields


