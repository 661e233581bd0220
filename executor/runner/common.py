"""What the runner's feature modules share: the event channel, the event byte budget, text caps,
the libraries every run can import, and human-readable sizes and durations.

The supervisor ends a run whose structured events pass 16 MiB (``EVENT_BYTES_CAP``), so the
runner keeps its own, lower budget: a run that compiles hundreds of functions or draws hundreds
of figures loses the texts and images of the later ones (with a visible notice), never the run.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time

SNIPPET_FILENAME = "<snippet>"

# The supervisor's cap is 16 MiB; what the runner sends stays below this.
EVENT_BUDGET_BYTES = 14 * 1024**2
# Of which compiled texts (jaxpr, StableHLO, HLO) may use this much; later compilations are
# reported without their texts.
TEXT_BUDGET_BYTES = 8 * 1024**2
# Each text of a compiled event is cut to this many characters, with a marker.
TEXT_CAP_CHARS = 200 * 1024

RUNNER_DIR = os.path.dirname(os.path.abspath(__file__))

# The libraries every run can import besides the standard library (their versions go with
# "ready"; an import of anything else is explained as not installed).
LIBRARIES = ("numpy", "scipy", "jax", "jaxlib", "optax", "flax", "equinox", "chex", "einops",
             "matplotlib", "rich")


class _Outbox:
    def __init__(self):
        self.channel = None
        self.lock = threading.Lock()
        self.sent_bytes = 0
        self.text_bytes = 0
        self.dropped = 0
        self.warned = False

    def send(self, type_: str, **fields) -> bool:
        """Send an event; False when there is no channel or the budget is spent."""
        if self.channel is None:
            return False
        size = len(json.dumps(fields, default=str)) + 32
        with self.lock:
            ok = self.sent_bytes + size <= EVENT_BUDGET_BYTES
            if ok:
                self.sent_bytes += size
            else:
                self.dropped += 1
            warn = not ok and not self.warned
            if warn:
                self.warned = True
        if warn:
            _stderr(
                "[playground] this run has sent as much compiled code, figures and timings as "
                "one run may (14 MiB): further ones are not shown."
            )
        if ok:
            self.channel.send(type_, **fields)
        return ok

    def take_text_budget(self, nbytes: int) -> bool:
        with self.lock:
            if self.text_bytes + nbytes > TEXT_BUDGET_BYTES:
                return False
            self.text_bytes += nbytes
            return True


outbox = _Outbox()


def set_channel(channel) -> None:
    outbox.channel = channel


_deadline: list[float | None] = [None]


def set_wall_clock(wall_s: float | None) -> None:
    """The run's wall-clock limit, counted from now (the request's arrival): what may wait
    (``%timeit``) stops before it instead of being killed silently at it."""
    _deadline[0] = time.monotonic() + wall_s if isinstance(wall_s, (int, float)) and wall_s > 0 else None


def deadline() -> float | None:
    """When the supervisor ends the run (time.monotonic()), if the request said."""
    return _deadline[0]


# How many lines the run's standard input has (None: it has none), for explaining an input()
# that finds no more.
_input_lines: list[int | None] = [None]


def set_input(text: str | None) -> None:
    """The run's standard input: its lines are counted as input() reads them, at each "\n" (a
    last line without one counts too)."""
    _input_lines[0] = text.count("\n") + (not text.endswith("\n")) if text else None


def input_lines() -> int | None:
    """How many lines the run's standard input has; None when the run has none."""
    return _input_lines[0]


def send(type_: str, **fields) -> bool:
    """Send one event to the supervisor (flushing the snippet's output first, so that the page
    shows them in the order they happened)."""
    flush_user_streams()
    return outbox.send(type_, **fields)


def flush_user_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - the snippet may have closed or replaced it
            pass


def _stderr(message: str) -> None:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - the snippet may have closed or replaced sys.stderr
        pass


def human_bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def human_bytes_binary(n: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def cap_text(text: str | None, limit: int = TEXT_CAP_CHARS) -> tuple[str | None, bool]:
    """``text`` cut to ``limit`` characters with a visible marker; (text, was_cut)."""
    if text is None or len(text) <= limit:
        return text, False
    total = human_bytes(len(text.encode("utf-8", errors="replace")))
    cut = text.rfind("\n", 0, limit)
    if cut < limit // 2:
        cut = limit
    return text[:cut] + f"\n… [truncated: {total} total]\n", True


def format_time(seconds: float, precision: int = 3) -> str:
    """A duration as IPython's %timeit writes it: "436 ms", "10.7 µs", "1min 2s"."""
    if seconds >= 60.0:
        parts = [("d", 60 * 60 * 24), ("h", 60 * 60), ("min", 60), ("s", 1)]
        time = []
        leftover = seconds
        for suffix, length in parts:
            value = int(leftover / length)
            if value > 0:
                leftover = leftover % length
                time.append(f"{value}{suffix}")
            if leftover < 1:
                break
        return " ".join(time)
    units = ["s", "ms", "\xb5s", "ns"]
    scaling = [1, 1e3, 1e6, 1e9]
    if seconds > 0.0:
        order = min(-int(math.floor(math.log10(seconds)) // 3), 3)
    else:
        order = 3
    return "%.*g %s" % (precision, seconds * scaling[order], units[order])


def ms(seconds: float | None, digits: int = 3) -> float | None:
    if seconds is None:
        return None
    return round(seconds * 1000, digits)


def leave(channel_fd: int, code: int) -> None:
    """End a runner: its output and event pipes closed first, so the supervisor need not wait
    while the kernel takes the process's memory apart (milliseconds, for a fork of a large
    template); never returns."""
    for fd in (1, 2, channel_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    os._exit(code)



# The runner's resident memory when it said "ready" (its runtime's own: libraries, a device's
# host mappings), for hosts whose /proc does not split resident memory by kind.
_baseline_rss_kb: list[int] = []


def _status_kb() -> dict[str, int]:
    fields = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if value.strip().endswith("kB"):
                    fields[name] = int(value.split()[0])
    except (OSError, ValueError):
        pass
    return fields


def mark_ready() -> None:
    """Called once, when the runner says "ready": what it holds then is the runtime's, not a run's."""
    _baseline_rss_kb[:] = [_status_kb().get("VmRSS", 0)]


def host_peak_kb() -> int | None:
    """The host memory the run used at its peak, without what a runtime maps of a device: a TPU's
    libtpu maps ~14 GB of host memory when the chip opens, which reads as the peak resident set of
    a print(1). Where /proc splits resident memory (Linux): the peak resident set less the file
    and shared mappings held now, and at least the anonymous memory held now. Where it does not
    (gVisor): the peak resident set less what the runner held when it said "ready"."""
    status = _status_kb()
    peak = status.get("VmHWM") or status.get("VmRSS")
    if peak is None:
        return None
    if "RssAnon" in status:
        return max(status["RssAnon"], peak - status.get("RssFile", 0) - status.get("RssShmem", 0))
    base = _baseline_rss_kb[0] if _baseline_rss_kb else 0
    return max(0, peak - base)


def device_peak_bytes() -> int | None:
    """The accelerator memory the run used at its peak: the largest ``peak_bytes_in_use`` among
    the devices of a backend the run started; None on a CPU (no such statistics) or before jax."""
    if "jax" not in sys.modules:
        return None
    try:
        from jax._src import xla_bridge

        if not getattr(xla_bridge, "_backends", None):
            return None
        import jax

        peaks = [(d.memory_stats() or {}).get("peak_bytes_in_use") for d in jax.local_devices()]
    except Exception:  # noqa: BLE001 - a backend without statistics, or one the snippet broke
        return None
    peaks = [p for p in peaks if isinstance(p, int)]
    return max(peaks) if peaks else None


def cpu_ms() -> float:
    """The process's CPU so far, its reaped children's included (ms)."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def usage() -> dict:
    """What the run used, as the runner itself reads it, for its "exit": the supervisor takes it
    where the sandbox has no counters of its own (no cgroup: the unsandboxed launcher), so that
    ``finished`` need not wait for the process's exit (a TPU runtime's teardown takes seconds)."""
    try:
        fields = {"cpu_ms": round(cpu_ms(), 1)}
        if (host := host_peak_kb()) is not None:
            fields["host_peak_kb"] = host
        if (device := device_peak_bytes()) is not None:
            fields["device_peak_bytes"] = device
        return fields
    except MemoryError:  # a run that filled its memory: the sandbox's counters say it
        return {}
