"""What a run's task message says of itself outside its body: Celery's headers travel to its
events and monitors (flower), so they name the run, never its code or its hidden checks."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid

from executor import submit


def test_a_run_message_names_its_run_and_carries_its_code_and_checks_only_in_its_body(redis_client):
    run_id = str(uuid.uuid4())
    checks = "assert answer == 42  # the hidden check"
    queue = f"exec.cpu.nobody-{uuid.uuid4().hex[:8]}"
    message = submit.run_message(run_id, "answer = 42\n", {}, {"wall_s": 5}, {"checks": checks})
    submit.send_to_queue(redis_client, queue, message)
    try:
        raw = redis_client.lrange(queue, 0, -1)
        assert len(raw) == 1
        envelope = json.loads(raw[0])
        headers = envelope["headers"]
        assert (headers["argsrepr"], headers["kwargsrepr"]) == ("", f"run {run_id}")
        assert checks not in json.dumps(headers) and "answer = 42" not in json.dumps(headers)
        body = json.loads(base64.b64decode(envelope["body"]))
        assert body[1] == message  # the executor gets all it needs
    finally:
        redis_client.delete(queue)


def test_the_broker_keeps_one_redis_client_per_channel_and_a_new_one_after_reconnecting(redis_client, monkeypatch):
    import redis
    from kombu import Connection, Producer

    from executor.celeryconf import share_redis_clients

    share_redis_clients()
    made = []
    original = redis.Redis.__init__

    def counted(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(redis.Redis, "__init__", counted)
    queue = f"broker-test-{uuid.uuid4().hex[:8]}"
    with Connection(os.environ["TEST_REDIS_URL"]) as connection:
        channel = connection.channel()
        producer = Producer(channel)
        try:
            producer.publish({"n": 0}, routing_key=queue, serializer="json")
            first = len(made)
            for n in range(1, 6):
                producer.publish({"n": n}, routing_key=queue, serializer="json")
            assert redis_client.llen(queue) == 6  # each went out
            assert len(made) == first, f"{len(made) - first} more clients for 5 more messages"
            channel._pool = None  # as after a reconnection: a new pool, and a client on it
            producer.publish({"n": 6}, routing_key=queue, serializer="json")
            assert len(made) == first + 1 and made[-1].connection_pool is channel.pool
            assert redis_client.llen(queue) == 7
        finally:
            redis_client.delete(queue)


def test_the_hubs_reader_packs_its_commands_in_c_and_reads_what_the_plain_client_reads(redis_client):
    import redis.asyncio

    from playground.streams import packed_in_c

    url = os.environ["TEST_REDIS_URL"]
    keys = [f"hub-test:{uuid.uuid4().hex[:8]}:{n}" for n in range(300)]
    for n, key in enumerate(keys):
        redis_client.xadd(key, {"e": f"event {n} é"}, id="0-1")
    # The connection the URL asks for, packing in C: TLS for rediss://, a unix socket for unix://.
    assert issubclass(packed_in_c("rediss://h:6380/0")["connection_class"], redis.asyncio.SSLConnection)
    assert issubclass(packed_in_c("unix:///run/redis.sock")["connection_class"],
                      redis.asyncio.UnixDomainSocketConnection)

    async def read(client):
        try:
            return await client.execute_command("XREAD", "COUNT", 10, "STREAMS", *keys, *(["0-0"] * len(keys)))
        finally:
            await client.aclose()

    try:
        packed = asyncio.run(read(redis.asyncio.Redis.from_url(url, **packed_in_c(url))))
        plain = asyncio.run(read(redis.asyncio.Redis.from_url(url)))
        assert packed == plain and len(packed) == 300
        assert packed[299][1][0][1] == {b"e": "event 299 é".encode()}
    finally:
        redis_client.delete(*keys)
