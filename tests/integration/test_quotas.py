"""Fair shares through the real stack (playground/quotas.py): runs queued or running at once per
client, the hourly budget of executor seconds, a full queue's 503, IPv6 counted per /64, and a
flooding client not delaying another's runs. The stack is this file's own: its settings turn the
shares on (the rest of the suite runs with them off), one executor slot, its own Redis database,
behind one trusted proxy so that each test is a client of its own (X-Forwarded-For)."""

from __future__ import annotations

import time

import pytest

from bench.stack import Stack
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

SLEEP = "import time\ntime.sleep({s})\nprint('done')\n"


@pytest.fixture(scope="module")
def quota_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    # Its clients are addresses (no one signs in): an address's cap is set to a person's, 2.
    with own_stack("quota", 12, tmp_path_factory, RUN_MAX_ACTIVE_PER_CLIENT="2", RUN_MAX_ACTIVE_PER_ADDRESS="2",
                   RUN_BUDGET_S_PER_HOUR="3", RUN_BUDGET_S_PER_DAY="0", RUN_QUEUE_MAX="3", TRUSTED_PROXIES="1",
                   EXECUTOR_CONCURRENCY="1", EXECUTOR_POOL_SIZE="1") as stack:
        yield stack


def released(stack: Stack, run_id: str, timeout: float = 30) -> None:
    """Wait until the run's end has given back its slot and counted its seconds (the quota's
    release, on the recorder's commit of the end)."""
    import redis

    from playground.quotas import _client_of

    client = redis.Redis.from_url(stack.env["REDIS_URL"])
    deadline = time.monotonic() + timeout
    while client.exists(_client_of(run_id)):
        assert time.monotonic() < deadline, f"run {run_id}'s share was not given back after {timeout} s"
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _idle_executor(request):
    """Each test starts with no run waiting: runs wait in Redis until the one slot frees (and a
    full queue answers 503), so a test's runs must not queue behind the last test's."""
    if "quota_stack" not in request.fixturenames:
        yield
        return
    import redis

    from executor import registry

    stack = request.getfixturevalue("quota_stack")
    client = redis.Redis.from_url(stack.env["REDIS_URL"])
    deadline = time.monotonic() + 60
    while registry.queue_depth(client, "cpu") or any(w.get("busy") for w in registry.online_workers(client, "cpu")):
        assert time.monotonic() < deadline, "the quota stack's executor is still busy after a minute"
        time.sleep(0.2)
    yield


def post_run(stack: Stack, client: str, code: str) -> tuple[int, dict, dict]:
    return stack.post_as(client, "/api/runs", {"code": code}, timeout=30)


def test_client_keys():
    from playground.quotas import client_key

    assert client_key("203.0.113.7") == "ip:203.0.113.7"
    assert client_key("::ffff:203.0.113.7") == "ip:203.0.113.7"
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff:ffff:ffff:fffe") == "ip:2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")

    class User:
        is_authenticated, pk = True, 7

    assert client_key("203.0.113.7", User()) == "user:7"


def test_runs_at_once_are_capped_per_client_and_the_slot_comes_back(quota_stack):
    # Long runs, ended by a cancel once the cap has been seen: they are still going whatever a
    # loaded machine makes of the requests' pace, and they spend little of the client's hourly
    # budget (3 s here), which a pair of runs that each slept a second could use up on their own.
    first = [post_run(quota_stack, "198.51.100.1", SLEEP.format(s=30)) for _ in range(2)]
    assert [s for s, _, _ in first] == [201, 201]
    status, body, headers = post_run(quota_stack, "198.51.100.1", "print(3)")
    assert status == 429, body
    assert body["limit"] == "active_runs" and "at most 2 at once" in body["error"]
    assert 1 <= int(headers["Retry-After"]) == body["retry_after"] <= 2
    # Another client is not affected.
    assert post_run(quota_stack, "198.51.100.2", "print(4)")[0] == 201
    for _, run, _ in first:
        assert quota_stack.post_as("198.51.100.1", f"/api/runs/{run['id']}/cancel", {})[0] == 202
    for _, run, _ in first:
        assert quota_stack.wait_finished(run["id"], timeout=60)["status"] == "cancelled"
        released(quota_stack, run["id"])  # the recorder gives the slot back once it stored the end
    status, body, _ = post_run(quota_stack, "198.51.100.1", "print(5)")
    assert status == 201, body


def test_an_ipv6_client_counts_per_64(quota_stack):
    for address in ("2001:db8:aa:1::1", "2001:db8:aa:1::2"):
        assert post_run(quota_stack, address, SLEEP.format(s=1))[0] == 201
    status, body, _ = post_run(quota_stack, "2001:db8:aa:1:ffff::9", "print(1)")
    assert status == 429 and body["limit"] == "active_runs", body
    assert post_run(quota_stack, "2001:db8:aa:2::1", "print(1)")[0] == 201


def test_the_hourly_budget_of_executor_seconds(quota_stack):
    status, run, _ = post_run(quota_stack, "198.51.100.3", SLEEP.format(s=3.2))
    assert status == 201
    assert quota_stack.wait_finished(run["id"], timeout=60)["status"] == "succeeded"
    released(quota_stack, run["id"])
    status, body, headers = post_run(quota_stack, "198.51.100.3", "print(1)")
    assert status == 429 and body["limit"] == "hourly_budget", body
    assert "3 s of cpu executor time" in body["error"]
    assert 1 <= int(headers["Retry-After"]) <= 3600


def test_a_full_queue_is_refused_at_once_and_nothing_is_lost(quota_stack):
    answers = []
    for i in range(8):  # eight clients, one slot: the queue fills
        t0 = time.monotonic()
        answers.append((*post_run(quota_stack, f"198.51.100.{20 + i}", SLEEP.format(s=1)), time.monotonic() - t0))
    refused = [a for a in answers if a[0] == 503]
    accepted = [a for a in answers if a[0] == 201]
    assert refused and refused[0][1]["limit"] == "queue_length", answers
    assert all(elapsed < 2 for *_, elapsed in refused)
    for _, run, _, _ in accepted:  # every accepted run runs
        assert quota_stack.wait_finished(run["id"], timeout=120)["status"] == "succeeded"


def test_runs_cancelled_while_queued_leave_the_queue_and_its_cap_at_once(quota_stack):
    """A cancelled run's message is taken off the queue with it: runs started and cancelled
    while the one slot is busy never fill the queue against the next person."""
    import redis

    from executor import registry

    broker = redis.Redis.from_url(quota_stack.env["REDIS_URL"])
    status, busy, _ = post_run(quota_stack, "198.51.100.140", SLEEP.format(s=2))
    assert status == 201
    deadline = time.monotonic() + 30
    while quota_stack.get(f"/api/runs/{busy['id']}")["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cancelled = []
    for i in range(6):  # twice the queue's cap of 3, each cancelled as soon as it is queued
        status, run, _ = post_run(quota_stack, f"198.51.100.{141 + i}", "print('never')")
        assert status == 201, run
        assert quota_stack.post_as(f"198.51.100.{141 + i}", f"/api/runs/{run['id']}/cancel", {})[0] == 202
        cancelled.append(run["id"])
    assert registry.queue_depth(broker, "cpu") == 0
    status, waiting, _ = post_run(quota_stack, "198.51.100.150", "print('mine')")
    assert status == 201, waiting  # not "the cpu queue is full"
    assert quota_stack.wait_finished(waiting["id"], timeout=60)["status"] == "succeeded"
    for run_id in cancelled:
        finished = quota_stack.wait_finished(run_id, timeout=30)
        assert finished["status"] == "cancelled" and finished["message"] == "cancelled before it started"


def test_a_flooding_client_does_not_delay_another(quota_stack):
    flood = [post_run(quota_stack, "198.51.100.40", SLEEP.format(s=1)) for _ in range(10)]
    assert [s for s, _, _ in flood].count(201) == 2 and [s for s, _, _ in flood].count(429) == 8
    t0 = time.monotonic()
    status, run, _ = post_run(quota_stack, "198.51.100.41", "print('mine')")
    assert status == 201
    finished = quota_stack.wait_finished(run["id"], timeout=60)
    # Behind at most the flooder's two one-second runs (one slot), not ten.
    assert finished["status"] == "succeeded" and time.monotonic() - t0 < 6


def started_at(stack: Stack, run_id: str) -> float:
    detail = stack.wait_finished(run_id, timeout=90)
    assert detail["status"] == "succeeded", detail
    return next(e["ts"] for e in detail["events"] if e["type"] == "started")


def test_a_clients_first_run_goes_before_anothers_second(quota_stack):
    """One slot. The flooder's first run takes it; its second waits in Redis at a later priority
    step (the worker holds no task it has no slot for), so the other client's first run, sent
    after it, starts before it."""
    quota_stack.wait_online("cpu")
    first = post_run(quota_stack, "198.51.100.50", SLEEP.format(s=2))
    time.sleep(0.5)  # running
    second = post_run(quota_stack, "198.51.100.50", SLEEP.format(s=1))
    other = post_run(quota_stack, "198.51.100.51", "print('mine')")
    assert [a[0] for a in (first, second, other)] == [201, 201, 201]
    assert started_at(quota_stack, other[1]["id"]) < started_at(quota_stack, second[1]["id"])
    assert started_at(quota_stack, first[1]["id"]) < started_at(quota_stack, other[1]["id"])


# A profiled run whose code writes the runner's "ended" itself, then runs on: its end goes out at
# once (supervisor.py's early end), and its runner lives on until the code ends.
FORGES_ITS_END = """
import gc, json, os, time
channel = next(o for o in gc.get_objects() if type(o).__name__ == "EventChannel")
os.write(channel.fd, json.dumps({"type": "ended", "status": "succeeded"}).encode() + b"\\n")
time.sleep(6)
"""


def test_a_run_that_ended_before_its_runner_holds_its_share_and_is_billed_the_runners_time(quota_stack):
    import redis

    from executor import shares
    from playground.quotas import _client_of

    client = redis.Redis.from_url(quota_stack.env["REDIS_URL"])
    t0 = time.monotonic()
    status, run, _ = quota_stack.post_as("198.51.100.7", "/api/runs",
                                         {"code": FORGES_ITS_END, "options": {"profile": True}}, timeout=30)
    assert status == 201, run
    detail = quota_stack.wait_finished(run["id"], timeout=60)
    ended_after = time.monotonic() - t0
    assert detail["status"] == "succeeded" and ended_after < 5, (ended_after, detail["status"])
    # Its end is stored, and the recorder's release with it, yet the share is still taken.
    assert client.exists(_client_of(run["id"])), "its share was given back with its end"
    assert client.exists(shares.hold_key(run["id"]))
    # Given back once its runner has gone (6 s in), and billed for all of it: 3 s an hour is spent.
    released(quota_stack, run["id"])
    assert time.monotonic() - t0 >= 6
    status, body, _ = post_run(quota_stack, "198.51.100.7", "print(1)")
    assert status == 429 and body["limit"] == "hourly_budget", body
