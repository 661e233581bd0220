"""A node's run threads (executor/runqueue.py) against real Redis: they take the queue's runs in
priority order, one a free slot, whether the web side pushed them or a Celery client published
them; a run taken as the node drains goes back to the front of its list; what is no run is
dropped and the next is taken."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
import redis
from celery import Celery

from executor import registry, submit
from executor.celeryconf import COMMON
from executor.runqueue import RunReader
from tests.conftest import TEST_REDIS_URL


class Node:
    """What the run threads ask of their executor: whether it drains, and to execute a run. Each
    run waits until the test lets it end."""

    def __init__(self):
        self.draining = False
        self.started: list[dict] = []
        self.release = threading.Event()
        self.release.set()

    def execute(self, run_id, code, options, limits, grade=None, session=None, stdin=""):
        self.started.append({"run_id": run_id, "code": code, "limits": limits, "stdin": stdin})
        self.release.wait(10)


@pytest.fixture
def queue():
    client = redis.Redis.from_url(TEST_REDIS_URL)
    name = f"exec.cpu.q{uuid.uuid4().hex[:8]}"
    yield client, name
    client.delete(*registry.priority_lists(name))


def message(code: str, **extra) -> dict:
    return submit.run_message(str(uuid.uuid4()), code, {}, {"wall_s": 5}, **extra)


def wait_for(predicate, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_runs_are_taken_lowest_priority_step_first_then_in_order(queue):
    client, name = queue
    for code, priority in [("a6", 6), ("b0", 0), ("c3", 3), ("d0", 0), ("e9", 9)]:
        submit.send_to_queue(client, name, message(code), priority)
    node = Node()
    reader = RunReader(node, client, [name], slots=1).start()
    try:
        wait_for(lambda: len(node.started) == 5)
    finally:
        reader.stop(wait_s=5)
    assert [r["code"] for r in node.started] == ["b0", "d0", "c3", "a6", "e9"]


def test_a_busy_slot_leaves_the_next_run_waiting_in_redis(queue):
    client, name = queue
    node = Node()
    node.release.clear()
    reader = RunReader(node, client, [name], slots=1).start()
    try:
        first, second = message("first"), message("second", stdin="42\n")
        submit.send_to_queue(client, name, first)
        wait_for(lambda: len(node.started) == 1)
        submit.send_to_queue(client, name, second)
        time.sleep(0.3)
        assert len(node.started) == 1 and client.llen(name) == 1
        node.release.set()
        wait_for(lambda: len(node.started) == 2)
        assert node.started[1] == {"run_id": second["run_id"], "code": "second", "limits": {"wall_s": 5},
                                   "stdin": "42\n"}
    finally:
        node.release.set()
        reader.stop(wait_s=5)


def test_a_celery_clients_publish_is_taken_too(queue):
    client, name = queue
    app = Celery("runqueue-test", broker=TEST_REDIS_URL)
    app.conf.update(COMMON)
    sent = message("print('from celery')")
    app.send_task(submit.RUN_TASK, kwargs=sent, queue=name, priority=3)
    node = Node()
    reader = RunReader(node, client, [name], slots=2).start()
    try:
        wait_for(lambda: node.started)
    finally:
        reader.stop(wait_s=5)
    assert node.started == [{"run_id": sent["run_id"], "code": "print('from celery')", "limits": {"wall_s": 5},
                             "stdin": ""}]


def test_what_is_no_run_is_dropped_and_the_next_is_taken(queue):
    client, name = queue
    client.lpush(name, b"not json", b'{"headers": {"task": "recorder.record_events"}, "body": "W10="}')
    sent = message("after the junk")
    submit.send_to_queue(client, name, sent)
    node = Node()
    reader = RunReader(node, client, [name], slots=1).start()
    try:
        wait_for(lambda: node.started)
        wait_for(lambda: client.llen(name) == 0)
    finally:
        reader.stop(wait_s=5)
    assert [r["run_id"] for r in node.started] == [sent["run_id"]]


def test_a_run_taken_as_the_node_drains_goes_back_to_the_front_of_its_list(queue):
    client, name = queue
    waiting, taken = message("waiting"), message("taken as the signal came")
    submit.send_to_queue(client, name, waiting)
    submit.send_to_queue(client, name, taken, 3)
    node = Node()
    node.draining = True
    reader = RunReader(node, client, [name], slots=1)
    key = registry.queue_list(name, 3).encode()
    raw = client.rpop(key)
    reader._take(key, raw)  # what a thread blocked in BRPOP does with a run that arrives then
    assert node.started == []
    assert [submit.read_task_message(m)["run_id"] for m in client.lrange(key, 0, -1)] == [taken["run_id"]]
    # A draining node's threads take nothing: both wait for the next node, the first one first.
    reader.start()
    time.sleep(0.2)
    reader.stop(wait_s=5)
    assert node.started == [] and client.llen(name) == 1 and client.llen(key) == 1
    later = RunReader(Node(), client, [name], slots=1)
    later.executor.release.set()
    later.start()
    try:
        wait_for(lambda: len(later.executor.started) == 2)
    finally:
        later.stop(wait_s=5)
    assert [r["code"] for r in later.executor.started] == ["waiting", "taken as the signal came"]
