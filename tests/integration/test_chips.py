"""A node of exclusive chips through the real stack: a Celery worker posing as ``tpu:standin``
(EXECUTOR_DEVICE_KIND) with one stand-in exclusive chip (EXECUTOR_EXCLUSIVE_DEVICES=1,
EXECUTOR_STANDIN_DEVICE: runner/exclusive.py holds a lock file as libtpu holds its lockfile, and
a second holder would fail with libtpu's words), in the real sandbox. Two runs at once both
succeed, the second told where it stands and its wait kept apart from its time; a notebook
session leases the chip, its page says so, and a run waits until the lease ends; one person's
next run reuses the runner on their chip, and someone else's never does."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from executor import events as ev

from tests.conftest import STANDIN
from tests.conftest import STANDIN_OPEN_MS as OPEN_MS

pytestmark = pytest.mark.django_db(transaction=True)

SEES = "import os\nprint('chip', os.environ.get('TPU_VISIBLE_CHIPS'))\n"


def post_run(code: str, client: Client | None = None, **body):
    answer = (client or Client()).post("/api/runs", {"code": code, "device": STANDIN, **body},
                                       content_type="application/json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def of_type(detail: dict, type_: str) -> list[dict]:
    return [e for e in detail["events"] if e["type"] == type_]


def wait_ready_chip(live_stack, timeout: float = 60) -> None:
    """Until the node's chip has a runner that opened it (after the last run's runner went)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if live_stack.wait_online(STANDIN).get("chips_ready"):
            return
        time.sleep(0.2)
    raise AssertionError("the chip did not open again")


def people(django_user_model, *names):
    from tests.people import PASSWORD, client_of

    return [client_of(django_user_model.objects.create_user(name, password=PASSWORD)) for name in names]


def test_two_peoples_runs_at_once_on_one_chip_both_succeed_the_second_waiting_apart(
        live_stack, standin_tpu, django_user_model):
    assert standin_tpu["chips"] == 1
    wait_ready_chip(live_stack)
    carol, dave = people(django_user_model, "chip-carol", "chip-dave")
    # Dave's run is sent once Carol's holds the chip, and hers holds it a while: sent together,
    # either may take the chip first on a loaded machine, and a short run may be over before the
    # other is even sent (then nothing waited).
    ids = [post_run(SEES + "import time\ntime.sleep(3)\n", client=carol)]
    deadline = time.monotonic() + 60
    while not of_type(live_stack.get(f"/api/runs/{ids[0]}"), "started"):
        assert time.monotonic() < deadline, "carol's run never started"
        time.sleep(0.1)
    ids.append(post_run(SEES, client=dave))
    details = [live_stack.wait_finished(i) for i in ids]
    assert [d["status"] for d in details] == ["succeeded", "succeeded"], details
    assert all("chip 0" in "".join(e["text"] for e in of_type(d, "stdout")) for d in details)
    first, second = sorted(details, key=lambda d: of_type(d, "started")[0]["ts"])
    # One holder at a time: the second started once the first had finished (its runner gone, the
    # next one's open paid), and said so while it waited, apart from its own time.
    waits = of_type(second, "waiting")
    assert waits and waits[0]["ahead"] == 0 and waits[0]["device"] == STANDIN
    started = of_type(second, "started")[0]
    assert started["ts"] >= of_type(first, "finished")[0]["ts"]
    assert started["chips"] == "0" and started["waited_ms"] >= OPEN_MS and not started.get("reused")
    assert [e["seq"] for e in second["events"]] == sorted(e["seq"] for e in second["events"])
    assert second["events"].index(waits[0]) < second["events"].index(started)
    # The run's own time is its code's, not its wait's.
    assert of_type(second, "finished")[0]["wall_ms"] < started["waited_ms"]


def test_a_run_asking_for_more_chips_than_the_node_has_is_told_why(live_stack, standin_tpu):
    detail = live_stack.wait_finished(post_run("print(1)", options={"chips": 2}))
    assert detail["status"] == "lost"
    assert "1 chip or all 1" in detail["message"]
    answer = Client().post("/api/runs", {"code": "1", "device": STANDIN, "options": {"chips": "all"}},
                           content_type="application/json")
    assert answer.status_code == 400 and "number of chips" in answer.json()["error"]


def test_a_session_leases_the_chip_and_a_run_waits_until_the_lease_ends(live_stack, standin_tpu, redis_client):
    wait_ready_chip(live_stack)
    session = live_stack.new_session(device=STANDIN)
    run, watched = live_stack.run_cell(session, "x = 41\nprint(x + 1)")
    started = next(e for e in watched.events if e["type"] == "started")
    assert started["chips"] == "0" and started["lease_until"] > time.time() + 30
    assert started["lease_until"] <= time.time() + 61  # ACCELERATOR_SESSION_IDLE_S, not the CPU's 20 minutes
    status, state = live_stack.call("GET", session["url"])
    assert status == 200 and state["lease"]["chips"] == "0" and state["lease"]["until"]
    # Someone else's run waits in line while the session holds the chip ...
    waiting = post_run("print('after the lease')")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        detail = live_stack.get(f"/api/runs/{waiting}")
        if of_type(detail, "waiting"):
            break
        time.sleep(0.2)
    assert detail["status"] == "queued" and of_type(detail, "waiting")
    # Its pulse goes on while it waits: a wait for a chip may outlast the alive key's own
    # ALIVE_TTL_S, and the watchdog would take the run as lost. Set at the claim and not again,
    # the key would have under ALIVE_TTL_S - 4 s left by now.
    time.sleep(2 * ev.ALIVE_EVERY_S + 0.5)
    assert redis_client.ttl(ev.alive_key(waiting)) >= ev.ALIVE_TTL_S - ev.ALIVE_EVERY_S - 1
    status, state = live_stack.call("GET", session["url"])
    assert state["lease"]["waiting"] >= 1  # the session's page says someone waits
    # ... a second cell runs in the same runner, its state kept ...
    _, watched = live_stack.run_cell(session, "print(x)")
    assert "".join(e.get("text", "") for e in watched.events if e["type"] == "stdout") == "41\n"
    # ... and when the lease ends the run takes the chip.
    status, _ = live_stack.call("DELETE", session["url"])
    assert status in (200, 204)
    detail = live_stack.wait_finished(waiting)
    assert detail["status"] == "succeeded"
    assert of_type(detail, "started")[0]["waited_ms"] > 0


def test_one_persons_next_run_reuses_the_runner_on_their_chip_and_another_gets_a_fresh_one(
        live_stack, standin_tpu, django_user_model):
    alice, bob = people(django_user_model, "chip-alice", "chip-bob")

    def run_as(client, code):
        answer = client.post("/api/runs", {"code": code, "device": STANDIN}, content_type="application/json")
        assert answer.status_code == 201, answer.content
        detail = live_stack.wait_finished(answer.json()["id"])
        assert detail["status"] in ("succeeded", "failed"), detail
        return detail, of_type(detail, "started")[0], "".join(e.get("text", "") for e in detail["events"]
                                                             if e["type"] in ("stdout", "stderr"))

    wait_ready_chip(live_stack)
    # The process's start time (each runner is pid 1 of its own namespace): which process ran it.
    pid = "print(open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19])\n"
    first, started, out = run_as(alice, pid + "secret = 42\n")
    assert first["status"] == "succeeded" and not started.get("reused")
    # Alice again: the same process (no chip open to wait for), and no globals of her last run.
    second, started, again = run_as(alice, pid + "print('secret' in globals())\n")
    assert started.get("reused") is True and started["waited_ms"] < OPEN_MS
    assert again.split() == [out.split()[0], "False"]
    # Bob: a fresh process, never Alice's.
    _, started, bobs = run_as(bob, pid)
    assert not started.get("reused") and bobs.split()[0] != out.split()[0]


def test_a_profiled_run_on_a_kept_runner_ends_with_its_code_and_the_runner_serves_the_next(
        live_stack, standin_tpu, django_user_model):
    """On a chip, a person's next run is a cell on the runner their last one left: a profiled one
    ends at its code's end, its trace built after; the runner, once its profiler has stopped, is
    kept for the run after."""
    (alice,) = people(django_user_model, "chip-profiler")
    wait_ready_chip(live_stack)
    code = "import jax, jax.numpy as jnp\nprint(float(jax.jit(lambda x: (x * 2).sum())(jnp.arange(8.0))))\n"
    ids = []
    for options in ({}, {"profile": True}, {}):
        answer = alice.post("/api/runs", {"code": code, "device": STANDIN, "options": options},
                            content_type="application/json")
        assert answer.status_code == 201, answer.content
        ids.append(answer.json()["id"])
        detail = live_stack.wait_finished(ids[-1])
        assert detail["status"] == "succeeded", detail
    runs = [live_stack.wait_finished(run_id) for run_id in ids]
    assert [bool(of_type(r, "started")[0].get("reused")) for r in runs] == [False, True, True]
    types = [e["type"] for e in runs[1]["events"]]
    assert types[-2:] == ["profile", "finished"], types
    profile = of_type(runs[1], "profile")[0]
    assert profile["building"] is True and "profile_ms" not in profile, profile
    # Its trace, built after the run: 202 while it is, then the trace, with the chip's lane.
    deadline = time.monotonic() + 60
    while True:
        answer = alice.get(profile["url"])
        if answer.status_code != 202 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert answer.status_code == 200, answer.content[:300]
