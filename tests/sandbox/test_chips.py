"""Exclusive chips (executor/chips.py) in the real sandbox, on a stand-in exclusive device
(runner/exclusive.py: one lock file a chip, flocked by the runner that opens it, as libtpu holds
its lockfile): one holder per chip, the line and its positions, the turnaround it is told, a
person who holds a chip passed over while someone who holds none waits, the per-chip split and a
run of the whole host."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

import pytest

from executor.chips import Cancelled, ChipPool, chip_env, count_chips
from executor.events import SUCCEEDED
from executor.runner import exclusive
from executor.sandbox import get_launcher
from executor.supervisor import run_request, supervise

from .conftest import BACKEND, LIMITS, UID_BASE

OPEN_MS = 300


@pytest.fixture(scope="module")
def standin():
    """The stand-in device's folder, which every runner may read (the lock files are the pool's)."""
    folder = tempfile.mkdtemp(prefix="jaxplay-chips-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def chip_launcher(standin):
    # Slots and uids of its own, above those of the folder's launcher.
    launcher = get_launcher(BACKEND, limits=LIMITS, uid_base=UID_BASE + 128, ro_binds=(standin,))
    yield launcher
    launcher.close()


@pytest.fixture
def make_pool(chip_launcher, standin):
    pools = []

    def make(count: int) -> ChipPool:
        pool = ChipPool(chip_launcher, count=count, first_slot=8, standin=standin, standin_open_ms=OPEN_MS)
        pool.start()
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.stop()


def wait_ready(pool: ChipPool, count: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while pool.idle_count() < count:
        assert time.monotonic() < deadline, f"the chips did not open: {pool.last_error}"
        time.sleep(0.05)


def eventually(check, what: str, timeout: float = 30) -> None:
    """Until ``check()`` holds: a thread that was just started may not have run yet on a loaded
    machine, and a fixed pause would be too short there."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def run_code(pool: ChipPool, runner, code: str) -> tuple[dict, str]:
    out: list[str] = []

    def emit(type_, **fields):
        if type_ == "stdout":
            out.append(fields["text"])

    try:
        finished = supervise(runner, pool.launcher, run_request(code, {}, ""), LIMITS, emit)
    finally:
        pool.release(runner)
    return finished, "".join(out)


SEES = "import os\nprint(os.environ.get('TPU_VISIBLE_CHIPS'), os.environ.get('TPU_CHIPS_PER_PROCESS_BOUNDS'))\n"


def test_the_standin_refuses_a_second_holder_at_once_with_libtpus_words(make_pool):
    pool = make_pool(1)
    wait_ready(pool, 1)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="libtpu multi-process lockfile") as raised:
        pool._open([0], pool.host_slot)  # a second runner on the held chip, as a careless pool would start
    assert "chip 0 is held by another process" in str(raised.value)
    assert time.monotonic() - t0 < 10  # refused at once, not after a wait for the lock
    # and the chip's own runner still holds it and runs
    finished, out = run_code(pool, pool.take("alice"), "print('still mine')")
    assert finished["status"] == SUCCEEDED and out == "still mine\n"


def test_one_chip_serves_two_runs_in_turn_the_second_told_where_it_stands(make_pool):
    pool = make_pool(1)
    wait_ready(pool, 1)
    first = pool.take("alice")
    told: list[dict] = []
    results: dict = {}

    def second():
        runner = pool.take("bob", on_wait=told.append)
        results["waited_ms"] = pool.held(runner).waited_ms
        results["ran"] = run_code(pool, runner, "print('bob')")

    thread = threading.Thread(target=second)
    thread.start()
    time.sleep(0.5)  # bob waits at least this long (the waited_ms below)
    eventually(lambda: told, "bob was never told where he stands")
    assert told and told[0]["ahead"] == 0 and "eta_s" not in told[0]  # nothing measured yet
    assert pool.describe()["chip_waiting"] == 1
    finished, out = run_code(pool, first, "print('alice')")
    thread.join(60)
    assert finished["status"] == SUCCEEDED and out == "alice\n"
    assert results["ran"][0]["status"] == SUCCEEDED and results["ran"][1] == "bob\n"
    # bob waited for alice's run, her runner's exit and the next one's open (at least OPEN_MS)
    assert results["waited_ms"] >= 500 + OPEN_MS
    # The chip's turnaround is measured, and a run that waits now is told about how long.
    wait_ready(pool, 1)
    assert pool.turnaround_s() is not None and pool.turnaround_s() >= OPEN_MS / 1000
    holder = pool.take("carol")
    later: list[dict] = []
    waiting = threading.Thread(target=lambda: pool.release(pool.take("dave", on_wait=later.append)))
    waiting.start()
    eventually(lambda: later, "dave was never told where he stands")
    assert later and later[0]["eta_s"] > 0
    pool.release(holder)
    waiting.join(60)
    assert not waiting.is_alive()


def test_the_next_runner_starts_while_the_chip_is_held_and_opens_it_once_free(make_pool):
    """The handover is the holder's exit and the chip's open alone: the chip's next runner (its
    process and imports) was started while alice held the chip, without touching it (the stand-in
    refuses a second holder), and it is the one bob's run gets."""
    pool = make_pool(1)
    wait_ready(pool, 1)
    alice = pool.take("alice")
    chip = pool.chips[0]
    eventually(lambda: chip.standby is not None, "no next runner was started while alice held the chip")
    standby = chip.standby
    assert standby.alive() and standby.slot != alice.slot
    got: dict = {}
    thread = threading.Thread(target=lambda: got.update(runner=pool.take("bob")))
    thread.start()
    eventually(lambda: pool.waiting() == 1, "bob never got in line")
    finished, _ = run_code(pool, alice, "print('alice')")
    thread.join(60)
    assert finished["status"] == SUCCEEDED
    bob = got["runner"]
    assert bob.proc.pid == standby.proc.pid  # the runner started while the chip was held
    assert bob.info.get("device_count") == 1  # what it found, said when it opened the chip
    finished, out = run_code(pool, bob, "print('bob')")
    assert finished["status"] == SUCCEEDED and out == "bob\n"
    described = pool.describe()
    assert described["chip_open_ms"] >= OPEN_MS and described["chip_start_ms"] > 0, described


def test_a_multi_chip_host_is_split_per_chip_and_a_run_may_hold_them_all(make_pool):
    pool = make_pool(2)
    wait_ready(pool, 2)
    a, b = pool.take("alice"), pool.take("bob")
    assert {c.index for c in pool.held(a).chips} | {c.index for c in pool.held(b).chips} == {0, 1}
    outs = {run_code(pool, a, SEES)[1], run_code(pool, b, SEES)[1]}
    assert outs == {"0 1,1,1\n", "1 1,1,1\n"}
    host = pool.take("carol", 2)
    assert [c.index for c in pool.held(host).chips] == [0, 1]
    finished, out = run_code(pool, host, SEES)
    assert finished["status"] == SUCCEEDED and out == "0,1 2,1,1\n"
    with pytest.raises(ValueError, match="1 chip or all 2"):
        pool.take("dave", 3)
    wait_ready(pool, 2)  # the chips' own runners open again once the host's has gone


def test_someone_who_holds_a_chip_is_passed_over_while_someone_who_holds_none_waits(make_pool):
    pool = make_pool(2)
    wait_ready(pool, 2)
    lease = pool.lease("alice")
    bob = pool.take("bob")
    order: list[str] = []

    def wait_for(person):
        runner = pool.take(person)
        order.append(person)
        pool.release(runner)

    threads = [threading.Thread(target=wait_for, args=(p,)) for p in ("alice", "carol")]
    for n, thread in enumerate(threads, 1):
        thread.start()
        # alice is in line first, and carol waits too before bob's chip is free
        eventually(lambda n=n: pool.waiting() == n, f"{n} should be waiting: {pool.waiting()}")
    pool.release(bob)
    deadline = time.monotonic() + 60
    while not order and time.monotonic() < deadline:
        time.sleep(0.05)
    assert order[:1] == ["carol"]  # alice holds chip 0 (her session's lease): carol goes first
    pool.release(lease)
    for thread in threads:
        thread.join(60)
    assert sorted(order) == ["alice", "carol"]


def test_a_run_cancelled_while_it_waits_leaves_the_line(make_pool):
    pool = make_pool(1)
    wait_ready(pool, 1)
    holder = pool.take("alice")
    cancel = threading.Event()
    outcome: list = []

    def waiter():
        try:
            pool.take("bob", cancelled=cancel.is_set)
        except Cancelled:
            outcome.append("cancelled")

    thread = threading.Thread(target=waiter)
    thread.start()
    eventually(lambda: pool.waiting() == 1, "bob never waited")
    assert pool.waiting() == 1
    cancel.set()
    thread.join(10)
    assert outcome == ["cancelled"] and pool.waiting() == 0
    pool.release(holder)


def test_the_chips_are_counted_from_the_setting_or_the_host():
    assert count_chips("tpu", 3) == 3
    assert count_chips("gpu", -1) == 0  # a GPU is shared
    assert count_chips("tpu", -1, "2,2,1") == 4
    assert count_chips("cpu", 0) == 0
    assert chip_env([2], 4) == {"TPU_VISIBLE_CHIPS": "2", "TPU_CHIPS_PER_PROCESS_BOUNDS": "1,1,1",
                                "TPU_PROCESS_BOUNDS": "1,1,1", "TPU_PROCESS_PORT": "8478"}
    assert chip_env([0], 1) == {}  # one chip: the host's own variables apply
    assert exclusive.lock_name(3) == "chip3.lock"
