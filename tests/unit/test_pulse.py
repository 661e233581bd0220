"""The node's pulse for runs that wait before they tick (executor/pulse.py), on the real Redis:
a wait that lasts keeps the run's alive key, a short one costs Redis nothing, and once the wait
is over no beat sets the key again."""

from __future__ import annotations

import threading
import time

from executor import events as ev
from executor.pulse import Pulse


def test_a_long_wait_keeps_the_runs_alive_key_and_a_short_one_touches_nothing(redis_client):
    pulse = Pulse(redis_client, "node-a", every_s=0.2)
    try:
        redis_client.set(ev.alive_key("long"), "node-a", ex=1)
        with pulse.meanwhile("long"):
            with pulse.meanwhile("short"):
                assert sorted(pulse.waiting()) == ["long", "short"]
            assert not redis_client.exists(ev.alive_key("short"))
            time.sleep(1.6)  # past the key's own second: kept only by the pulse
            assert redis_client.get(ev.alive_key("long")) == b"node-a"
            assert redis_client.ttl(ev.alive_key("long")) >= ev.ALIVE_TTL_S - 1  # set within every_s
        assert pulse.waiting() == []
    finally:
        pulse.stop()


def test_no_beat_sets_the_key_again_once_the_wait_is_over(redis_client):
    pulse = Pulse(redis_client, "node-a", every_s=0.05)
    try:
        for i in range(50):
            run = f"run-{i}"
            with pulse.meanwhile(run):
                time.sleep(0.06 if i % 2 else 0.0)
            # The run ended: its end deletes the key, and no beat may bring it back.
            redis_client.delete(ev.alive_key(run))
        time.sleep(0.3)
        assert not [k for k in redis_client.keys("run:run-*:alive")]
    finally:
        pulse.stop()


def test_a_beat_is_one_round_trip_for_all_that_are_due(redis_client):
    pulse = Pulse(redis_client, "node-b", every_s=3600)  # its own thread never finds one due
    try:
        held = threading.Event()
        release = threading.Event()

        def wait(run: str) -> None:
            with pulse.meanwhile(run):
                held.set()
                release.wait(5)

        threads = [threading.Thread(target=wait, args=(f"r{i}",)) for i in range(3)]
        for t in threads:
            t.start()
        while len(pulse.waiting()) < 3:
            time.sleep(0.01)
        assert pulse.beat() == 0  # none has waited every_s yet
        pulse.every_s = 0
        assert pulse.beat() == 3
        assert all(redis_client.get(ev.alive_key(f"r{i}")) == b"node-b" for i in range(3))
        release.set()
        for t in threads:
            t.join()
    finally:
        pulse.stop()
