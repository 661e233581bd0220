"""What a websocket may leave waiting in the web process, through the real server (daphne with
web/server.py's protocol), as a hostile script would push it: a client that sends faster than its
messages are answered is closed (4429) once WS_MAX_PENDING_MESSAGES wait, and one that never reads
what its session's cells print is dropped once WS_MAX_UNSENT_BYTES wait for it. Either way the
process stays small and the next client is served."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import time
from urllib.parse import urlparse

import pytest

from executor import events as ev
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

UNSENT = 1024**2


@pytest.fixture(scope="module")
def stack(django_db_setup, django_db_blocker, tmp_path_factory):
    with own_stack("ws-limits", 5, tmp_path_factory, TRUSTED_PROXIES="1", WS_MAX_UNSENT_BYTES=str(UNSENT),
                   RUN_RATE_LIMIT_PER_MINUTE="0", EXECUTOR_CONCURRENCY="2", RUN_WALL_S="20") as stack:
        stack.wait_online("cpu")
        yield stack


def web_log(stack) -> str:
    return (stack.logdir / "web.log").read_text(errors="replace")


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def raw_socket(stack, path: str, client: str, receive_buffer: int = 4096) -> socket.socket:
    """A websocket opened by hand over a TCP socket that reads nothing after the handshake, with a
    small receive buffer: what the server sends it waits in the server."""
    where = urlparse(stack.url)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.connect((where.hostname, where.port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {where.netloc}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                  f"X-Forwarded-For: {client}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock


def send_frame(sock: socket.socket, text: str) -> None:
    payload = text.encode()
    mask = os.urandom(4)
    size = len(payload)
    head = struct.pack("!B", 0x81) + (struct.pack("!B", 0x80 | size) if size < 126 else
                                       struct.pack("!BH", 0x80 | 126, size) if size < 65536 else
                                       struct.pack("!BQ", 0x80 | 127, size))
    sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


def test_a_client_sending_faster_than_it_is_answered_is_closed_and_the_next_is_served(stack):
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    client = "198.51.100.81"
    session = stack.new_session(client)
    status, busy = stack.call("POST", f"{session['url']}/cells", {"code": "import time\ntime.sleep(6)\n"},
                              client=client)
    assert status == 201, busy
    web = stack.procs["web"].pid
    before = rss_kb(web)
    cell = json.dumps({"op": "cell", "code": "x = 1\n" + "#" * 60_000})
    with connect(f"{stack.ws_url}{session['ws']}", additional_headers={"X-Forwarded-For": client},
                 open_timeout=10, max_size=2**22) as ws:
        sent = 0
        try:
            for _ in range(3000):  # each answered a tenth of a second apart (a busy session's 409)
                ws.send(cell)
                sent += 1
            while True:
                ws.recv(timeout=30)
        except ConnectionClosed:  # the close, seen while sending or while reading
            pass
        assert ws.close_code == 4429, (ws.close_code, ws.close_reason, sent)
    assert rss_kb(web) - before < 200 * 1024, (before, rss_kb(web))
    # The session, and everyone else, is served as before.
    assert stack.watch(busy["id"], client=client).finished["status"] == ev.SUCCEEDED
    # On a loaded machine the flood may still have been read when that cell ended, and one of its
    # cells admitted then (a cell like any, the session free): the next waits for the session.
    deadline = time.monotonic() + 30
    while (state := stack.call("GET", session["url"], client=client)[1])["running"] is not None:
        assert time.monotonic() < deadline, state
        time.sleep(0.1)
    with stack.session_socket(session, client) as fresh:
        started, watched = fresh.cell("print(40 + 2)\n")
        assert started["type"] == "cell_started" and watched.text().strip() == "42", started


def test_a_client_that_never_reads_its_cells_output_is_dropped(stack):
    client = "198.51.100.82"
    session = stack.new_session(client)
    sock = raw_socket(stack, session["ws"], client)
    loud = json.dumps({"op": "cell", "code": "print('y' * 900_000)\n"})
    dropped = False
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not dropped:
            send_frame(sock, loud)  # the next cell once the last ended: the socket says nothing
            time.sleep(0.5)
            status, state = stack.call("GET", session["url"], client=client)
            dropped = state["cells_run"] >= 1 and "dropped a websocket" in web_log(stack)
    except OSError:  # reset by the server while sending
        dropped = "dropped a websocket" in web_log(stack)
    finally:
        sock.close()
    assert dropped, "a client that reads nothing was never dropped"
    status, state = stack.call("GET", session["url"], client=client)
    assert status == 200 and state["cells_run"] <= 3 + UNSENT // 900_000, state
    with stack.session_socket(session, client) as fresh:
        started, watched = fresh.cell("print('still here')\n")
        assert watched.text().strip() == "still here"
