"""The executor's side of the compile cache (executor/compilecache.py), on a folder of its own:
what a run's report may queue, that an entry is stored only under the key the executor computes
and named by the node's secret, what a run is answered when it asks, the folder's modes, and
eviction."""

from __future__ import annotations

import base64
import os
import stat

import pytest

from executor.compilecache import (
    LOOKUPS_PER_RUN, MAX_PENDING, MAX_PENDING_EACH, MISSES_PER_RUN, CompileCache, folder_for)
from executor.runner.compilecache import MAX_REPORTED, MAX_MODULE_BYTES, entry_key


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def module(n: int, **extra) -> dict:
    return {"module": b64(f"module {n}".encode()), "options": b64(b"opts"), "devices": [0], "shape": [1], **extra}


@pytest.fixture
def cache(tmp_path):
    return CompileCache(folder_for(tmp_path, "jax-0.12", "cpu", "", 8, ""), max_bytes=1000).open()


def test_the_folder_is_readable_by_name_only(cache):
    assert stat.S_IMODE(cache.folder.stat().st_mode) == 0o711
    [job] = [cache.next_job(0) for _ in range(cache.submit([module(1)]))]
    cache.done(job, [{"key": job["key"], "executable": b64(b"exe")}])
    entry = cache.folder / cache.name(job["key"])
    assert entry.read_bytes() == b"exe" and stat.S_IMODE(entry.stat().st_mode) == 0o644
    assert not (cache.folder / job["key"]).exists()  # the key a run can compute is not the name
    secret = cache.folder.parent / f"{cache.folder.name}.key"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600 and len(secret.read_bytes()) == 32


def stored(cache, n: int) -> str:
    cache.submit([module(n)])
    job = cache.next_job(0)
    cache.done(job, [{"key": job["key"], "executable": b64(b"exe")}])
    return job["key"]


def test_a_run_is_told_an_entrys_name_and_only_so_many_misses(cache):
    key = stored(cache, 1)
    lookup = cache.lookups()
    assert lookup(key) == {"name": cache.name(key)}
    answers = [lookup(entry_key(f"guess {i}".encode(), b"", [0], [1])) for i in range(MISSES_PER_RUN)]
    assert answers[:-1] == [{"name": None}] * (MISSES_PER_RUN - 1)
    assert answers[-1] == {"name": None, "spent": True}
    # Spent: not even what is here is named any more, so the answers say nothing.
    assert lookup(key) == {"name": None, "spent": True}
    # Another run asks afresh.
    assert cache.lookups()(key) == {"name": cache.name(key)}
    assert cache.stats()["hits"] == 2 and cache.stats()["misses"] == MISSES_PER_RUN


def test_hits_too_are_answered_only_so_many_times_and_a_malformed_key_ends_the_answers(cache):
    key = stored(cache, 1)
    lookup = cache.lookups()
    assert all(lookup(key)["name"] for _ in range(LOOKUPS_PER_RUN))
    assert lookup(key) == {"name": None, "spent": True}
    for bad in ("../" + key[3:], key.upper(), key[:-1], 7, None):
        fresh = cache.lookups()
        assert fresh(bad) == {"name": None, "spent": True}
        assert fresh(key) == {"name": None, "spent": True}


def test_a_new_secret_clears_what_the_old_one_named(cache):
    key = stored(cache, 1)
    again = CompileCache(cache.folder, max_bytes=1000).open()
    assert again.name(key) == cache.name(key) and again.stats()["entries"] == 1  # the node's secret is kept
    (cache.folder.parent / f"{cache.folder.name}.key").unlink()
    (cache.folder / key).write_bytes(b"named by the bare key, as before")
    fresh = CompileCache(cache.folder, max_bytes=1000).open()
    assert fresh.name(key) != cache.name(key)
    assert os.listdir(cache.folder) == [] and fresh.lookups()(key) == {"name": None}


def test_an_entry_is_stored_under_the_key_computed_here_whatever_the_runner_says(cache):
    cache.submit([module(1)])
    job = cache.next_job(0)
    assert job["key"] == entry_key(b"module 1", b"opts", [0], [1])
    other = entry_key(b"module 2", b"opts", [0], [1])
    # A runner answering for another module's key: nothing is stored, under either key.
    assert cache.done(job, [{"key": other, "executable": b64(b"planted")}]) is False
    assert os.listdir(cache.folder) == []
    # And a failed module is not queued again at once.
    assert cache.submit([module(1)]) == 0
    assert cache.stats()["failed"] == 1


@pytest.mark.parametrize("bad", [
    "not a list",
    [{"module": "%%%", "options": "", "devices": [0], "shape": [1]}],  # not base64
    [module(1, devices=[0, 1], shape=[3])],  # the devices do not fill the shape
    [module(1, devices=[-1])],
    [module(1, devices=[True])],
    [module(1, shape=[1, 0])],
    [module(1, devices="0")],
    [{"module": b64(b"x" * (MAX_MODULE_BYTES + 1)), "options": "", "devices": [0], "shape": [1]}],
    [{"module": "", "options": "", "devices": [0], "shape": [1]}],
    [{"options": "", "devices": [0], "shape": [1]}],
    [None, 3, "x"],
])
def test_a_malformed_report_queues_nothing(cache, bad):
    assert cache.submit(bad) == 0
    assert cache.next_job(0) is None


def test_a_report_queues_each_module_once_and_at_most_what_a_run_may_report(cache):
    assert cache.submit([module(i) for i in range(MAX_REPORTED + 5)]) == MAX_REPORTED
    assert cache.submit([module(0), module(1)]) == 0  # already waiting
    assert cache.stats()["waiting"] == MAX_REPORTED
    job = cache.next_job(0)
    cache.done(job, [{"key": job["key"], "executable": b64(b"e")}])
    assert cache.submit([module(0)]) == 0  # already cached


def test_each_reporter_has_its_turn_and_at_most_its_share_waiting(cache):
    """One person's eight modules do not hold back another's one: the queue takes each
    reporter's oldest in turn. A reporter past their share loses their own oldest."""
    cache.submit([module(i) for i in range(MAX_REPORTED)], reporter="a")
    cache.submit([module(100)], reporter="b")
    order = []
    while (job := cache.next_job(0)) is not None:
        order.append((job["reporter"], job["key"]))
        cache.done(job, [{"key": job["key"], "executable": b64(b"e")}])
    assert [r for r, _ in order[:3]] == ["a", "b", "a"] and len(order) == MAX_REPORTED + 1
    for start in range(200, 200 + 3 * MAX_REPORTED, MAX_REPORTED):
        cache.submit([module(i) for i in range(start, start + MAX_REPORTED)], reporter="a")
    assert cache.stats()["waiting"] == MAX_PENDING_EACH
    # The first module waits (it may be compiling now); the next oldest went.
    assert cache.next_job(0)["key"] == entry_key(b"module 200", b"opts", [0], [1])
    assert cache.submit([module(201)], reporter="a") == 1  # forgotten, so it may be queued again


def test_the_queue_forgets_the_oldest_of_whoever_has_most_waiting_past_its_bound(cache):
    reporters = [f"r{n}" for n in range(MAX_PENDING // MAX_REPORTED)]
    for n, reporter in enumerate(reporters):
        cache.submit([module(n * MAX_REPORTED + i) for i in range(MAX_REPORTED)], reporter=reporter)
    assert cache.stats()["waiting"] == MAX_PENDING
    assert cache.submit([module(10**6)], reporter="late") == 1  # someone new still gets a turn
    assert cache.stats()["waiting"] == MAX_PENDING
    seen = set()
    while (job := cache.next_job(0)) is not None:
        seen.add(job["reporter"])
        cache.done(job, [])
    assert "late" in seen and set(reporters) <= seen


def test_the_oldest_entries_go_past_the_size_limit_and_a_new_worker_finds_the_rest(cache, tmp_path):
    keys = []
    for i in range(5):
        cache.submit([module(i)])
        job = cache.next_job(0)
        cache.done(job, [{"key": job["key"], "executable": b64(bytes(300))}])
        keys.append(job["key"])
    assert sorted(os.listdir(cache.folder)) == sorted(map(cache.name, keys[-3:]))  # 900 of 1000 bytes
    (cache.folder / "leftover.part").write_bytes(b"half")
    again = CompileCache(cache.folder, max_bytes=1000).open()
    assert again.stats()["entries"] == 3 and not (cache.folder / "leftover.part").exists()


def test_an_entry_key_keeps_its_parts_apart():
    assert entry_key(b"ab", b"c", [0], [1]) != entry_key(b"a", b"bc", [0], [1])
    assert entry_key(b"a", b"b", [0, 1], [2]) != entry_key(b"a", b"b", [1, 0], [2])
    assert entry_key(b"a", b"b", [0, 1], [2]) != entry_key(b"a", b"b", [0, 1], [1, 2])


def test_an_entry_a_run_loads_is_the_last_to_be_evicted(cache):
    keys = [stored_of_size(cache, i, 300) for i in range(3)]  # 900 of 1000 bytes
    assert cache.lookups()(keys[0])["name"]  # the oldest, used again
    stored_of_size(cache, 3, 300)
    assert sorted(os.listdir(cache.folder)) == sorted(map(cache.name, [keys[0], keys[2], cache_key(3)]))


def cache_key(n: int) -> str:
    return entry_key(f"module {n}".encode(), b"opts", [0], [1])


def stored_of_size(cache, n: int, size: int) -> str:
    cache.submit([module(n)])
    job = cache.next_job(0)
    cache.done(job, [{"key": job["key"], "executable": b64(bytes(size))}])
    return job["key"]


def test_a_module_whose_job_was_cut_short_may_be_queued_again_sooner(cache, monkeypatch):
    import executor.compilecache as cc

    cache.submit([module(1), module(2)])
    refused = cache.next_job(0)
    cache.done(refused, [])  # XLA said no: an hour
    cut = cache.next_job(0)
    cache.done(cut, [], retry_after=cc.RETRY_SOON_S)  # timed out
    now = cc.time.monotonic()
    monkeypatch.setattr(cc.time, "monotonic", lambda: now + cc.RETRY_SOON_S + 1)
    assert cache.submit([module(1)]) == 0 and cache.submit([module(2)]) == 1
