"""The real server (``python -m web.server``) and daphne as it comes, at a websocket's two ends.

A busy server that accepts a socket after 6 s lets it in (daphne as it comes resets it after 4 to
5 s with no answer, or refuses it with 403). When the server closes a socket it gives the client
time to answer the close before it resets the connection: with daphne's own setting (a 1 s close
handshake, kept by autobahn in buckets of whole seconds, so from 0 to 1 s) a client that was slow
to answer under load was reset first, and one that reads in a thread (websockets' sync client)
lost the frames that had arrived with the close, a run's ``finished`` among them."""

from __future__ import annotations

import base64
import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from .conftest import base_env

# Longer than anything daphne's own timeout can reach, shorter than ours (4 to 5 s).
SLOW_ANSWER_S = 2.5


def handshake(port: int, path: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                 f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)
        assert chunk, f"the server closed during the handshake: {head!r}"
        head += chunk
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def read_frame(sock: socket.socket) -> tuple[int, bytes]:
    def exactly(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            assert chunk, "the connection ended inside a frame"
            data += chunk
        return data

    first, second = exactly(2)
    length = second & 0x7F
    if length == 126:
        length = struct.unpack(">H", exactly(2))[0]
    elif length == 127:
        length = struct.unpack(">Q", exactly(8))[0]
    return first & 0x0F, exactly(length)


def masked_close(code: int) -> bytes:
    mask, payload = os.urandom(4), struct.pack(">H", code)
    return bytes([0x88, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def still_open(sock: socket.socket) -> bool:
    """Nothing left to read and no reset: the connection is as the server left it."""
    sock.setblocking(False)  # a socket with a timeout would wait for something to read
    try:
        sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    return False  # data or an end of file: not what a closed-by-server socket waiting for us has


def close_after_a_slow_answer(port: int) -> tuple[int, bytes, bool]:
    # 'after' that is not a number: the consumer accepts, then closes with its own code.
    sock = handshake(port, "/ws/runs/00000000-0000-0000-0000-000000000000/?after=x")
    try:
        opcode, payload = read_frame(sock)
        assert opcode == 8, (opcode, payload)
        code = struct.unpack(">H", payload[:2])[0]
        time.sleep(SLOW_ANSWER_S)
        alive = still_open(sock)
        if alive:
            sock.setblocking(True)
            sock.sendall(masked_close(code))
        return code, payload[2:], alive
    finally:
        sock.close()


@pytest.mark.django_db
def test_a_client_slow_to_answer_the_close_is_not_reset(web_server):
    server = web_server(base_env())
    code, _reason, alive = close_after_a_slow_answer(server.port)
    assert code == 4400  # the consumer's own close (daphne sends no reason)
    assert alive, f"the server reset the socket before {SLOW_ANSWER_S} s had passed for the client to answer"
    # The server goes on serving sockets.
    assert close_after_a_slow_answer(server.port)[2]


@pytest.mark.django_db
def test_plain_daphne_would_have_reset_it(web_server):
    """What the setting is for: daphne's own close handshake resets the slow client."""
    daphne = web_server(base_env(), module="daphne")
    assert not close_after_a_slow_answer(daphne.port)[2]


def handshake_of_a_slow_accept(port: int) -> str:
    try:
        sock = handshake(port, "/ws/slow/")
    except (AssertionError, ConnectionResetError) as e:
        return f"no answer: {e!r}"
    try:
        opcode, payload = read_frame(sock)
        return payload.decode() if opcode == 1 else f"opcode {opcode}"
    finally:
        sock.close()


def test_a_socket_accepted_after_six_seconds_is_let_in(web_server):
    server = web_server(base_env(SLOW_ACCEPT_S="6"), app="tests.ops.slow_accept:application")
    assert handshake_of_a_slow_accept(server.port) == '{"type": "hello"}'


def test_plain_daphne_resets_a_socket_accepted_after_six_seconds(web_server):
    daphne = web_server(base_env(SLOW_ACCEPT_S="6"), module="daphne", app="tests.ops.slow_accept:application")
    assert handshake_of_a_slow_accept(daphne.port).startswith("no answer")


def stop_with_a_call_stuck(server, wait: float = 30) -> tuple[float, str]:
    """Start a request whose call never ends, SIGTERM the server, wait for it to exit at most
    ``wait`` s: (seconds it took, or ``wait`` when it had not, and its log)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(b"GET /stuck HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    time.sleep(0.5)  # the call has begun
    t0 = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    try:
        server.proc.wait(wait)
    except subprocess.TimeoutExpired:
        pass
    took = time.monotonic() - t0
    sock.close()
    server.stop()
    return took, server.logfile.read_text(errors="replace")


def test_a_stop_held_by_a_stuck_call_ends_in_time_and_says_where_it_was_stuck(web_server):
    from web.server import STOP_GRACE_S

    took, log = stop_with_a_call_stuck(web_server(base_env(), app="tests.ops.stuck_call:application"))
    # Within the grace (below the unit's TimeoutStopSec), not after the call's 300 s.
    assert STOP_GRACE_S - 1 < took < STOP_GRACE_S + 5, (took, log[-2000:])
    assert "the process exits within" in log
    # Where it was stuck: every thread's stack, the stuck call's among them.
    assert "wait_behind_a_lock" in log and "stuck_call.py" in log, log[-3000:]


def test_plain_daphne_waits_for_a_stuck_call_to_end(web_server):
    from web.server import STOP_GRACE_S

    took, _ = stop_with_a_call_stuck(web_server(base_env(), module="daphne", app="tests.ops.stuck_call:application"),
                                     wait=STOP_GRACE_S + 5)
    assert took >= STOP_GRACE_S + 5
