"""Exclusive devices: one slot a chip, one runner a chip, and a line to wait in for one.

    executor worker on a node of N chips (EXECUTOR_EXCLUSIVE_DEVICES)
      ├─ a keeper thread per chip ── launcher.start(slot, env=chip_env(i)) ──▶ runner, told "warm":
      │     it opens the chip (libtpu takes the chip's lockfile) and waits there, holding it
      ├─ task threads ── ChipPool.take(person) ── in line, in turn ──▶ that runner runs one snippet;
      │     after its "finished" the runner is discarded (the lock goes with the process) and
      │     the chip's keeper starts the next one at once
      ├─ a run for the whole host (chips: N) ── the chips' runners are closed, one runner opens all
      └─ notebook sessions ── ChipPool.lease(person) ── the same line: the session's runner is
            the chip's for as long as the session lives (ACCELERATOR_SESSION_IDLE_S idle at most)

A TPU chip can be held by one process at a time: a second process that starts its backend fails
at once with "ABORTED: Internal error when accessing libtpu multi-process lockfile". So the pool
of a CPU node (several warm runners, each starting its backend) cannot serve a TPU: here each
chip has exactly one runner at a time, and the next one is started only once the last has been
reaped, never while it exits. Opening a v5e chip takes 7 to 10 s: the runner pays it while it
waits, so a run that finds the chip's runner ready waits for nothing; the one after it waits for
the last runner's exit and the next one's open (the "turnaround", measured and told to whoever
waits). A GPU is not exclusive (its runners share it and take a fraction of its memory each):
its nodes keep the ordinary pool (executor/pool.py).

One person's consecutive runs may reuse the runner that holds their chip (the same trust domain:
their state is their own): a plain run (not graded, no standard input) runs there as a cell of
its own namespace (runner/session.py, ``fresh``), and when it ends the runner is kept for them
for ``keep_s`` unless someone else is next in line; their next run then waits for nothing. What
is kept between those runs: the process, the modules it imported (and what a run changed in
them), jax's backend, its compiled executables and the device's memory a run left referenced from
a module, files in /tmp, threads a run left running. What is not: the globals of ``__main__``
(each run starts from a fresh namespace), and anything of anyone else's, since a different
person always gets a fresh process (a kept runner is closed for them, and at ``keep_s``).

The line is first come, first served, with one rule of fairness: a person who holds a chip
already (a run, a session's lease) is passed over while someone who holds none waits. A run for
the whole host waits at the head of the line until every chip is free; the runs behind it wait
for it (none overtakes it, so it is never starved).

Each chip's runner sees its own chip only: ``TPU_VISIBLE_CHIPS`` with single-chip bounds
(``chip_env``), given to the launcher as the runner's own environment (``Launcher.start(env=)``),
which comes over the host's TPU_* variables that the launcher passes on.
"""

from __future__ import annotations

import glob
import json
import logging
import math
import os
import select
import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from .runner import exclusive, protocol
from .runner.exclusive import DEFER_BACKEND_VAR
from .sandbox import Launcher
from .supervisor import Runner, discard, wait_ready

log = logging.getLogger("executor.chips")

# How long a runner may take to say "ready" and then to open its chip. A v5e's open took 7.2 to
# 9.5 s; a chip that does not open in this long is a fault, said in the worker's log.
OPEN_TIMEOUT_S = 120.0
# After a runner that could not open its chip, the keeper waits this long (doubling, up to the
# most) before it tries again: a chip held by a process outside the pool frees itself, or not.
RETRY_FIRST_S, RETRY_MOST_S = 0.5, 30.0
# A waiting run is told where it stands when that changes, and at least this often (its "about").
TELL_EVERY_S = 5.0
# The turnarounds the "about" is reckoned from: the last ones measured.
KEPT = 50

EMPTY, OPENING, READY, TAKEN = "empty", "opening", "ready", "taken"


class Cancelled(Exception):
    """The run was cancelled (or its node stops) while it waited for a chip."""


def count_chips(kind: str, configured: int, bounds: str = "") -> int:
    """How many exclusive chips this node splits its runs over: ``configured``
    (EXECUTOR_EXCLUSIVE_DEVICES) when it is set (0: the device is shared); on a TPU node, the
    chips its device nodes show (/dev/accel<n>, /dev/vfio/<n>), else those libtpu's variables say
    (``TPU_CHIPS_PER_HOST_BOUNDS=2,2,1``: 4), else 1; on any other kind, 0. The nodes come first:
    a container given one chip of a v5litepod-4 keeps the host's variables (2,2,1) but shows one
    node, and a runner told to see chips it has not finds none."""
    if configured >= 0:
        return configured
    if kind != "tpu":
        return 0
    nodes = glob.glob("/dev/accel[0-9]*") or [p for p in glob.glob("/dev/vfio/*") if os.path.basename(p).isdigit()]
    if nodes:
        return len(nodes)
    bounds = bounds.strip()
    if bounds:
        try:
            return max(1, math.prod(int(b) for b in bounds.split(",")))
        except ValueError:
            log.warning("TPU_CHIPS_PER_HOST_BOUNDS=%r is not a list of numbers; one chip", bounds)
    return 1


def chip_env(chips: list[int], count: int, host_bounds: str = "") -> dict[str, str]:
    """What a runner's environment says of the chips it may open, over the host's TPU_*
    variables: on a host of one chip, nothing (the host's own apply); else the chips it sees,
    ``TPU_VISIBLE_CHIPS``, as a process of its own (``TPU_PROCESS_BOUNDS=1,1,1``) whose chips are
    one (``TPU_CHIPS_PER_PROCESS_BOUNDS=1,1,1``) or the host's all (its own bounds), with a port
    of its own (``TPU_PROCESS_PORT``) for the runs without a network namespace (sandbox none)."""
    if count <= 1:
        return {}
    whole = len(chips) == count
    return {
        "TPU_VISIBLE_CHIPS": ",".join(str(c) for c in chips),
        "TPU_CHIPS_PER_PROCESS_BOUNDS": (host_bounds or f"{count},1,1") if whole else "1,1,1",
        "TPU_PROCESS_BOUNDS": "1,1,1",
        "TPU_PROCESS_PORT": str(8476 + (count if whole else chips[0])),
    }


@dataclass
class Chip:
    index: int
    slot: int
    # The slot of its next runner, started while this one holds the chip (the two take turns).
    spare_slot: int = -1
    state: str = EMPTY
    runner: Runner | None = None
    # The chip's next runner: started, with jax imported, but not opening the chip until the chip
    # is free (its backend deferred); None, or being started (``standby_starting``).
    standby: Runner | None = None
    standby_starting: bool = False
    # The slots of its runners being closed (not yet reaped).
    closing_slots: set[int] = field(default_factory=set)
    # Whose run or lease holds it (TAKEN), and since when.
    holder: str | None = None
    lease: bool = False
    taken_at: float = 0.0
    # When its last holder took it: the turnaround is measured from there to its next runner ready.
    last_taken_at: float | None = None
    # A runner kept for one person's next run (READY), until when; and whether its runner was told
    # "session" (it runs plain runs as cells: only its person's, never a graded run's).
    kept_for: str | None = None
    kept_until: float = 0.0
    runs_cells: bool = False


@dataclass
class Waiter:
    person: str
    chips: int
    lease: bool
    reusable: bool = False
    since: float = field(default_factory=time.monotonic)
    granted: list[Chip] | None = None
    ready: threading.Event = field(default_factory=threading.Event)


@dataclass
class Held:
    """A runner handed out: the chips it holds, whose they are, and how long they waited."""
    chips: list[Chip]
    person: str
    lease: bool
    waited_ms: float
    reused: bool = False


class ChipPool:
    def __init__(self, launcher: Launcher, *, count: int, first_slot: int, standin: str = "",
                 standin_open_ms: int = 0, host_bounds: str = "", keep_s: float = 0.0,
                 premapped_bytes: int = 0):
        self.launcher = launcher
        # libtpu's host buffer for transfers (TPU_PREMAPPED_BUFFER_SIZE), which it maps and pins
        # when the chip opens and unmaps at the holder's exit: 0 leaves libtpu's own (4 GiB).
        self.premapped_bytes = premapped_bytes
        # How long a runner is kept for its person's next run (0: never kept).
        self.keep_s = keep_s
        self.count = count
        self.host_slot = first_slot + count  # the one runner of a run for the whole host
        self.chips = [Chip(index=i, slot=first_slot + i, spare_slot=self.host_slot + 1 + i) for i in range(count)]
        self.host_bounds = host_bounds
        self.standin = standin
        self.standin_open_ms = standin_open_ms
        self._waiters: deque[Waiter] = deque()
        self._held: dict[int, Held] = {}  # runner slot → what it holds
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # What the node's first runner said of its devices (the worker's start waits for it).
        self.last_info: dict = {}
        self.failures = 0
        self.last_error: str | None = None
        self.changed = threading.Event()
        # The chip's open alone (a started runner's "warm" to "warmed"), and a runner's start before
        # it (its process and imports: paid while the chip is still held, by the standby).
        self.open_times_ms: deque[float] = deque(maxlen=KEPT)
        self.start_times_ms: deque[float] = deque(maxlen=KEPT)
        self.turnarounds_s: deque[float] = deque(maxlen=KEPT)

    # Lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self.standin:
            self._make_standin()
        for chip in self.chips:
            thread = threading.Thread(target=self._keep, args=(chip,), name=f"chip-{chip.index}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Refuse the waiting, and discard the runners that wait on their chips (those of runs in
        progress go as those runs end)."""
        self._stop.set()
        with self._cond:
            for waiter in self._waiters:
                waiter.ready.set()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(timeout=OPEN_TIMEOUT_S)
        with self._cond:
            idle = [c for c in self.chips if c.state == READY]
            for chip in idle:
                chip.state = EMPTY
            standbys = [c.standby for c in self.chips if c.standby is not None]
            for chip in self.chips:
                chip.standby = None
        for chip in idle:
            runner, chip.runner = chip.runner, None
            if runner is not None:
                discard(runner, self.launcher)
        for runner in standbys:
            discard(runner, self.launcher)

    def _make_standin(self) -> None:
        """The stand-in device's lock files (runner/exclusive.py), one a chip, which every runner
        reads (it takes a lock; it writes nothing)."""
        os.makedirs(self.standin, exist_ok=True)
        for chip in self.chips:
            path = os.path.join(self.standin, exclusive.lock_name(chip.index))
            with open(path, "a"):
                pass
            os.chmod(path, 0o644)

    def env_for(self, chips: list[int]) -> dict[str, str]:
        """A runner's own environment: the chips it sees, its backend deferred to "warm" (it may be
        started while another process holds them), libtpu's transfer buffer unless the host's
        environment sets its own, and the stand-in device's folder where there is one."""
        env = chip_env(chips, self.count, self.host_bounds)
        env[DEFER_BACKEND_VAR] = "1"
        if self.premapped_bytes and "TPU_PREMAPPED_BUFFER_SIZE" not in os.environ:
            env["TPU_PREMAPPED_BUFFER_SIZE"] = str(self.premapped_bytes)
        if self.standin:
            env.update({exclusive.FOLDER_VAR: self.standin, exclusive.OPEN_MS_VAR: str(self.standin_open_ms),
                        "TPU_VISIBLE_CHIPS": ",".join(str(c) for c in chips)})
        return env

    # Use ---------------------------------------------------------------------------------------

    def take(self, person: str, chips: int = 1, *, lease: bool = False, reusable: bool = False,
             on_wait: Callable[[dict], None] | None = None,
             cancelled: Callable[[], bool] | None = None) -> Runner:
        """The runner of a chip (``chips``: 1, or this node's all) for ``person``'s run, or for their
        notebook session's lease (``lease``), once it is their turn; a run that may run as a cell
        (``reusable``) takes the runner kept for them first (``held(runner).reused``); meanwhile ``on_wait`` is told
        where they stand (``where``), when that changes and every TELL_EVERY_S. Raises Cancelled
        when ``cancelled()`` says so, or the node stops, before their turn; ValueError for a
        number of chips this node cannot give; RuntimeError when a runner for the whole host
        cannot open its chips."""
        if chips not in (1, self.count):
            raise ValueError(f"a run on this node may ask for 1 chip or all {self.count}, not {chips}")
        waiter = Waiter(person=person, chips=chips, lease=lease, reusable=reusable and chips == 1 and not lease)
        with self._cond:
            self._waiters.append(waiter)
            self._dispatch()
        told, told_at = None, 0.0
        while not waiter.ready.wait(0.2):
            if self._stop.is_set() or (cancelled is not None and cancelled()):
                if self._withdraw(waiter):
                    raise Cancelled()
                break  # granted meanwhile: handed out below, given back by the caller
            where = self.where(waiter)
            if on_wait is not None and where is not None and (
                    (where["ahead"], where.get("eta_s") is None) != told or time.monotonic() - told_at >= TELL_EVERY_S):
                told, told_at = (where["ahead"], where.get("eta_s") is None), time.monotonic()
                on_wait(where)
        if waiter.granted is None:
            raise Cancelled()
        waited_ms = (time.monotonic() - waiter.since) * 1000
        granted = waiter.granted
        reused = False
        if len(granted) == 1 and granted[0].runner is not None:
            runner = granted[0].runner
            reused = granted[0].kept_for == person
            granted[0].kept_for = None
        else:
            runner = self._open_host(granted)  # the whole host: its chips were closed for it
        with self._cond:
            self._held[runner.slot] = Held(chips=granted, person=person, lease=lease, waited_ms=waited_ms,
                                           reused=reused)
        self.changed.set()
        return runner

    def lease(self, person: str, *, on_wait=None, cancelled=None) -> Runner:
        """A chip's runner for a notebook session, held while the session lives."""
        return self.take(person, 1, lease=True, on_wait=on_wait, cancelled=cancelled)

    def held(self, runner: Runner) -> Held | None:
        with self._cond:
            return self._held.get(runner.slot)

    def runs_cells(self, runner: Runner) -> bool:
        """Whether the runner was told "session" already (a kept one): its next run is a cell."""
        held = self.held(runner)
        return bool(held and held.chips[0].runs_cells)

    def set_runs_cells(self, runner: Runner) -> None:
        held = self.held(runner)
        if held is not None:
            held.chips[0].runs_cells = True

    def release(self, runner: Runner, keep: bool = False) -> None:
        """After its run (or its session): the runner is discarded, and reaped, before its chips
        are free: a runner started while it exited would find the chip's lock still held.
        ``keep``: the run ended and its runner lives on (a cell): it is kept for its person's next
        run, unless someone else is next in line."""
        with self._cond:
            held = self._held.pop(runner.slot, None)
            if keep and held is not None and len(held.chips) == 1 and self.keep_s > 0 and runner.alive() \
                    and not self._stop.is_set() and self._next_is_theirs(held.person):
                chip = held.chips[0]
                chip.state, chip.holder, chip.lease = READY, None, False
                chip.kept_for, chip.kept_until = held.person, time.monotonic() + self.keep_s
                self._dispatch()
                self._cond.notify_all()
                self.changed.set()
                return
        try:
            discard(runner, self.launcher)
        finally:
            with self._cond:
                for chip in held.chips if held else []:
                    chip.state, chip.runner, chip.holder, chip.lease = EMPTY, None, None, False
                    chip.kept_for, chip.runs_cells = None, False
                    chip.last_taken_at = chip.taken_at
                self._dispatch()
                self._cond.notify_all()
            self.changed.set()

    def where(self, waiter: Waiter) -> dict | None:
        """Where a waiting run stands: how many wait ahead of it, and about how long its wait
        lasts, from the turnarounds measured lately (None before there are any)."""
        with self._cond:
            if waiter not in self._waiters:
                return None
            ahead = self._waiters.index(waiter)
            busy = sum(1 for c in self.chips if c.state != READY)
        where = {"device": "chip", "ahead": ahead, "chips": waiter.chips, "lease": waiter.lease}
        turnaround = self.turnaround_s()
        if turnaround is not None:
            # Each chip frees about once a turnaround; those ahead take them in turn, and this
            # one the next to free after them.
            rounds = self.count if waiter.chips > 1 else math.ceil((ahead + 1) / max(1, self.count))
            where["eta_s"] = round(turnaround * rounds if busy else 0.0, 1)
        return where

    def turnaround_s(self) -> float | None:
        """The median of the chips' last turnarounds: from a holder taking a chip to the chip's
        next runner ready (the run, the runner's exit, the next one's open)."""
        return statistics.median(self.turnarounds_s) if self.turnarounds_s else None

    def describe(self) -> dict:
        """What the heartbeat says of the chips (``/api/devices``, the metrics)."""
        with self._cond:
            return {
                "chip_start_ms": statistics.median(self.start_times_ms) if self.start_times_ms else None,
                "chips": self.count,
                "chips_ready": sum(1 for c in self.chips if c.state == READY),
                "chips_taken": sum(1 for c in self.chips if c.state == TAKEN),
                "chips_leased": sum(1 for c in self.chips if c.state == TAKEN and c.lease),
                "chip_waiting": len(self._waiters),
                "chip_turnaround_s": self.turnaround_s(),
                "chip_open_ms": statistics.median(self.open_times_ms) if self.open_times_ms else None,
            }

    def waiting(self) -> int:
        with self._cond:
            return len(self._waiters)

    def idle_count(self) -> int:
        with self._cond:
            return sum(1 for c in self.chips if c.state == READY)

    # Internals ---------------------------------------------------------------------------------

    def _withdraw(self, waiter: Waiter) -> bool:
        with self._cond:
            if waiter.granted is not None:
                return False
            if waiter in self._waiters:
                self._waiters.remove(waiter)
                self._dispatch()
            return True

    def _next_is_theirs(self, person: str) -> bool:
        """Under the lock: nobody waits, or ``person`` is next in line (a kept runner waits for them)."""
        holding = {c.holder for c in self.chips if c.state == TAKEN}
        waiter = self._next_waiter(holding)
        return waiter is None or (waiter.person == person and waiter.reusable)

    def _fits(self, chip: Chip, waiter: Waiter) -> bool:
        """A ready chip's runner for this waiter: one kept for them (their plain run), or a fresh one."""
        if chip.state != READY:
            return False
        if chip.kept_for is None and not chip.runs_cells:
            return True
        return chip.kept_for == waiter.person and waiter.reusable

    def _dispatch(self) -> None:
        """Under the lock: hand chips to the waiting, in turn (see the module's docstring)."""
        while self._waiters:
            holding = {c.holder for c in self.chips if c.state == TAKEN}
            waiter = self._next_waiter(holding)
            if waiter is None:
                return
            if waiter.chips == 1:
                fits = [c for c in self.chips if self._fits(c, waiter)]
                chip = next((c for c in fits if c.kept_for == waiter.person), None) or next(iter(fits), None)
                if chip is None:
                    # A runner kept for someone else (or for this person's plain runs) goes: a
                    # different person, or a graded run, always gets a fresh process.
                    kept = next((c for c in self.chips if c.state == READY and (c.kept_for or c.runs_cells)), None)
                    if kept is not None:
                        self._close_async(kept)
                    return
                granted = [chip]
            else:
                if any(c.state != EMPTY for c in self.chips):
                    # The chips' runners that wait go, so that one runner can open them all;
                    # those of runs in progress go as they end.
                    for chip in self.chips:
                        if chip.state == READY:
                            self._close_async(chip)
                    return
                granted = list(self.chips)
            now = time.monotonic()
            for chip in granted:
                chip.state, chip.holder, chip.lease, chip.taken_at = TAKEN, waiter.person, waiter.lease, now
            self._waiters.remove(waiter)
            waiter.granted = granted
            waiter.ready.set()
            self.changed.set()

    def _next_waiter(self, holding: set) -> Waiter | None:
        """The first in line, except one who holds a chip already while someone who holds none
        waits; none past a run for the whole host (it would never find every chip free)."""
        for waiter in self._waiters:
            if waiter.person in holding and any(w.person not in holding for w in self._waiters):
                continue
            return waiter
        return None

    def _host_wanted(self) -> bool:
        """Under the lock: a run for the whole host is next in line (chips are not opened again)."""
        holding = {c.holder for c in self.chips if c.state == TAKEN}
        waiter = self._next_waiter(holding)
        return waiter is not None and waiter.chips > 1 and self.count > 1

    def _close_async(self, chip: Chip) -> None:
        """Under the lock: discard a chip's waiting runner (for a run of the whole host, or one
        kept for someone who did not come back in time)."""
        runner, chip.runner, chip.state = chip.runner, None, OPENING  # until its runner is reaped
        chip.kept_for, chip.runs_cells = None, False
        # The chip is handed over from here: its close, then the next runner's open.
        chip.last_taken_at = time.monotonic()
        if runner is not None:
            chip.closing_slots.add(runner.slot)

        def close() -> None:
            try:
                if runner is not None:
                    discard(runner, self.launcher)
            finally:
                with self._cond:
                    if runner is not None:
                        chip.closing_slots.discard(runner.slot)
                    chip.state = EMPTY
                    self._dispatch()
                    self._cond.notify_all()

        threading.Thread(target=close, name=f"chip-{chip.index}-close", daemon=True).start()

    def _keep(self, chip: Chip) -> None:
        """A chip's keeper: whenever the chip has no runner (and no run of the whole host waits
        for it), have its next runner open it; and while the chip is held, start that next
        runner (the standby: its process and imports, not the chip), so that a handover is the
        last holder's exit and the chip's open alone."""
        backoff = RETRY_FIRST_S
        standby_after = 0.0  # after a standby that could not start, not before this
        while not self._stop.is_set():
            with self._cond:
                action = self._await_work(chip, standby_after)
                if action is None:
                    return
                slot = self._free_slot(chip)
                standby = None
                if action == "open":
                    standby, chip.standby = chip.standby, None
            if action == "standby":
                if not self._start_standby(chip, slot):
                    standby_after = time.monotonic() + RETRY_MOST_S
                continue
            if standby is not None and not standby.alive():
                discard(standby, self.launcher)
                standby = None
            try:
                runner = self._open([chip.index], slot, standby)
            except Exception as exc:  # noqa: BLE001 - a launcher fails in its own ways; said, tried again
                self.failures += 1
                self.last_error = str(exc)
                log.warning("chip %s: its runner could not open it (%s); trying again in %.1f s",
                            chip.index, exc, backoff)
                with self._cond:
                    chip.state = EMPTY
                self._stop.wait(backoff)
                backoff = min(backoff * 2, RETRY_MOST_S)
                continue
            backoff = RETRY_FIRST_S
            self.failures = 0
            now = time.monotonic()
            with self._cond:
                if self._stop.is_set() or self._host_wanted():
                    chip.state = OPENING
                    stale = runner
                else:
                    stale = None
                    chip.runner, chip.state = runner, READY
                    if chip.last_taken_at is not None:
                        self.turnarounds_s.append(now - chip.last_taken_at)
                        chip.last_taken_at = None
                    self._dispatch()
                    self._cond.notify_all()
            if stale is not None:  # a run for the whole host came while it opened
                discard(stale, self.launcher)
                with self._cond:
                    chip.state = EMPTY
                    self._dispatch()
                    self._cond.notify_all()
            self.changed.set()

    def _await_work(self, chip: Chip, standby_after: float) -> str | None:
        """Under the lock: wait until the chip wants its runner opened ("open": it is free and no
        run of the whole host waits) or a standby started ("standby"); None when the pool stops.
        Meanwhile a runner kept past its time is closed."""
        while not self._stop.is_set():
            if chip.state == EMPTY and not self._host_wanted():
                chip.state = OPENING
                return "open"
            if chip.standby is None and not chip.standby_starting and time.monotonic() >= standby_after \
                    and self._free_slot(chip) is not None:
                chip.standby_starting = True
                return "standby"
            if chip.state == READY and (chip.kept_for or chip.runs_cells) and time.monotonic() >= chip.kept_until:
                self._close_async(chip)  # its person did not come back: a fresh one, ready
            wait = 1.0 if chip.standby is not None or chip.standby_starting else \
                max(0.05, min(1.0, standby_after - time.monotonic()))
            if chip.kept_for:
                wait = min(wait, max(0.05, chip.kept_until - time.monotonic()))
            self._cond.wait(wait)
        return None

    def _start_standby(self, chip: Chip, slot: int) -> bool:
        """Start the chip's next runner (its process and imports) while the chip is held; False
        when it could not start (said in the log: the chip's open then starts one afresh)."""
        runner = None
        try:
            runner = self._start([chip.index], slot)
        except Exception as exc:  # noqa: BLE001 - a launcher fails in its own ways
            log.warning("chip %s: its next runner could not start (%s)", chip.index, exc)
        with self._cond:
            chip.standby_starting = False
            if runner is not None and not self._stop.is_set():
                chip.standby, runner = runner, None
            self._cond.notify_all()
        if runner is not None:  # the pool stopped meanwhile
            discard(runner, self.launcher)
            return True
        return chip.standby is not None

    def _free_slot(self, chip: Chip) -> int | None:
        """Under the lock: of the chip's two slots, one that no runner of it has (its runner, its
        standby, one being closed)."""
        used = {r.slot for r in (chip.runner, chip.standby) if r is not None} | chip.closing_slots
        return next((slot for slot in (chip.slot, chip.spare_slot) if slot not in used), None)

    def _start(self, chips: list[int], slot: int) -> Runner:
        """A runner for ``chips``, started and "ready": its process and imports, its backend
        deferred (``env_for``), so that it touches no chip yet."""
        t0 = time.monotonic()
        proc = self.launcher.start(slot, env=self.env_for(chips))
        runner = Runner(proc=proc, slot=slot)
        try:
            wait_ready(runner, OPEN_TIMEOUT_S)
        except BaseException:
            discard(runner, self.launcher)
            raise
        self.start_times_ms.append((time.monotonic() - t0) * 1000)
        return runner

    def _open(self, chips: list[int], slot: int, runner: Runner | None = None) -> Runner:
        """A runner that has opened ``chips``: ``runner`` (a standby, started and "ready"), else one
        started now, told "warm" and "warmed": its backend starts only then."""
        if runner is None:
            runner = self._start(chips, slot)
        try:
            t0 = time.monotonic()
            runner.proc.stdin.write(protocol.request("warm"))
            runner.proc.stdin.flush()
            warmed = _read_message(runner, "warmed", OPEN_TIMEOUT_S)
            if warmed.get("warm_ms") is None:
                why = warmed.get("error") or _stderr_tail(runner) or "its backend did not start"
                raise RuntimeError(f"its runner could not open chip {','.join(map(str, chips))}: {why}")
            self.open_times_ms.append((time.monotonic() - t0) * 1000)
            runner.info.update({k: v for k, v in warmed.items() if k not in ("type", "warm_ms", "error")})
            runner.warmth = "warm"
            if len(chips) == 1:
                self.last_info = runner.info
        except BaseException:
            discard(runner, self.launcher)
            raise
        return runner

    def _open_host(self, chips: list[Chip]) -> Runner:
        try:
            return self._open([c.index for c in chips], self.host_slot)
        except BaseException:
            with self._cond:
                for chip in chips:
                    chip.state, chip.holder, chip.lease = EMPTY, None, False
                self._dispatch()
                self._cond.notify_all()
            raise


def _read_message(runner: Runner, type_: str, timeout: float) -> dict:
    """Read the runner's event pipe up to its ``type_`` message (what came before it is the pool's:
    nothing of a run's yet)."""
    deadline = time.monotonic() + timeout
    while True:
        while b"\n" in runner.event_buffer:
            line, _, runner.event_buffer = runner.event_buffer.partition(b"\n")
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("type") == type_:
                return message
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"its runner did not open the chip within {timeout:g} s")
        readable, _, _ = select.select([runner.event_fd], [], [], remaining)
        if readable:
            chunk = os.read(runner.event_fd, 65536)
            if not chunk:
                raise RuntimeError(f"its runner exited while it opened the chip: {_stderr_tail(runner)}")
            runner.event_buffer += chunk


def _stderr_tail(runner: Runner) -> str:
    try:
        if select.select([runner.proc.stderr], [], [], 0.2)[0]:
            return runner.proc.stderr.read1(8192).decode(errors="replace").strip()[-500:]
    except (OSError, ValueError):
        pass
    return ""
