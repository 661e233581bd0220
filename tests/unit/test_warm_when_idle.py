"""When a node counts as idle, so that its waiting runners may warm up (executor/pool.py): no
run in progress for a moment, and nothing waiting in its queues. Between two runs of a burst it
is idle for a few milliseconds, and a queued run means more are coming: neither may count."""

from __future__ import annotations

import time
import uuid

import pytest
import redis

from executor import registry, settings
from executor.execution import Executor
from tests.conftest import TEST_REDIS_URL


@pytest.fixture
def node():
    client = redis.Redis.from_url(TEST_REDIS_URL)
    executor = Executor(app=None, redis=client, name="cpu@idle-test", launcher=None)
    # Its own specific kind's queue, which no other node of the suite's Redis reads (a live
    # stack's executor would take what is pushed onto exec.cpu).
    executor.specific = f"idle-{uuid.uuid4().hex[:8]}"
    lists = registry.queue_lists(executor.route)
    client.delete(*lists)
    yield executor, client, lists
    client.delete(*lists)


def test_idle_only_after_a_moment_without_runs_and_with_nothing_queued(node):
    executor, client, lists = node
    executor.idle_since = time.monotonic() - 1
    assert executor.idle()
    executor.busy = 1
    assert not executor.idle()  # a run in progress
    executor.busy = 0
    executor.idle_since = time.monotonic()
    assert not executor.idle()  # a run has just ended: the next of a burst may be on its way
    executor.idle_since = time.monotonic() - 1
    client.rpush(lists[2], b"{}")  # a run waiting, at a lower priority
    assert not executor.idle()
    client.delete(*lists)
    assert executor.idle()


def test_a_node_that_warms_nothing_is_never_asked(node):
    executor, _, _ = node
    assert (executor.pool.idle is None) == (not settings.WARM_WHEN_IDLE)
