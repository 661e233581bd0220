"""Request bodies over MAX_REQUEST_BYTES are refused while they are read, by the real server
(``python -m web.server``): a 413 JSON answer as soon as Content-Length says so, or, chunked, as
soon as the bytes read pass the limit; nothing of the body reaches a file (the server's TMPDIR
stays empty, and it never holds a file open there), and the server goes on serving."""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from .conftest import base_env

MIB = 1024**2
HUNDRED_MIB = 100 * MIB


@pytest.fixture
def server(web_server, tmp_path):
    tmpdir = tmp_path / "server-tmp"
    tmpdir.mkdir()
    started = web_server(base_env(TMPDIR=str(tmpdir)))
    started.tmpdir = tmpdir
    return started


def files_open_in(pid: int, folder: Path) -> list[str]:
    found = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith(str(folder)):
            found.append(target)
    return found


class Exchange:
    """One raw HTTP/1.1 exchange: the head, then a body sent as a stream while a reader collects
    the answer as soon as it comes."""

    def __init__(self, port: int, head: bytes):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
        self.answer = b""
        self.answered_at: float | None = None
        self.sent_when_answered: int | None = None
        self.closed = threading.Event()
        self.marked = threading.Lock()
        self.sent = 0
        self.send_error: Exception | None = None
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.sock.sendall(head)

    def _read(self) -> None:
        try:
            while True:
                data = self.sock.recv(65536)
                if not data:
                    break
                if self.answered_at is None:
                    self.answered_at = time.monotonic()
                self._mark_answered()
                self.answer += data
        except OSError:
            pass
        self.closed.set()

    def _mark_answered(self) -> None:
        """Note how much had been sent when the answer came. Both threads note it: the reader
        may not be scheduled for a while on a loaded machine, and the sender sees the answer
        waiting in the socket before each chunk."""
        with self.marked:
            if self.sent_when_answered is None:
                self.sent_when_answered = self.sent

    def send(self, chunks, during=None) -> None:
        try:
            for chunk in chunks:
                if self.sent_when_answered is None and select.select([self.sock], [], [], 0)[0]:
                    self._mark_answered()
                self.sock.sendall(chunk)
                self.sent += len(chunk)
                if during is not None:
                    during()
        except OSError as exc:  # the server closed the connection: expected once it refused
            self.send_error = exc

    def wait(self, timeout: float = 10) -> tuple[int, dict, bytes]:
        self.closed.wait(timeout)
        self.sock.close()
        head, _, body = self.answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1 ") else 0
        return status, json.loads(body) if body.startswith(b"{") else {}, head


def post_head(path: str, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def stream(total: int, size: int = MIB):
    block = b"x" * size
    for _ in range(total // size):
        yield block


def chunked(total: int, size: int = MIB):
    for block in stream(total, size):
        yield b"%x\r\n" % len(block) + block + b"\r\n"
    yield b"0\r\n\r\n"


def assert_refused(status: int, body: dict, head: bytes) -> None:
    assert status == 413, head
    assert body["limit"] == settings.MAX_REQUEST_BYTES
    assert f"the limit is {settings.MAX_REQUEST_BYTES} bytes" in body["error"]
    assert b"content-type: application/json" in head.lower()
    assert b"100 Continue" not in head


def assert_still_serving(server) -> None:
    assert server.proc.poll() is None
    assert server.get("/healthz")[:2] == (200, {"status": "ok"})
    assert list(server.tmpdir.iterdir()) == []


def test_content_length_over_the_limit_is_refused_before_any_body(server):
    exchange = Exchange(server.port, post_head("/api/runs", f"Content-Length: {HUNDRED_MIB}"))
    started = time.monotonic()
    status, body, head = exchange.wait()
    assert_refused(status, body, head)
    assert f"the request body is {HUNDRED_MIB} bytes" in body["error"]
    assert exchange.answered_at - started < 2
    assert exchange.sent == 0
    assert_still_serving(server)


@pytest.mark.parametrize("header", ["Accept-Language: zh-CN,zh;q=0.9", "Cookie: playground_language=zh-hans"])
def test_the_refusal_is_in_the_senders_language(server, header):
    exchange = Exchange(server.port, post_head("/api/runs", f"Content-Length: {HUNDRED_MIB}", header))
    status, body, head = exchange.wait()
    assert status == 413 and body["limit"] == settings.MAX_REQUEST_BYTES
    assert body["error"] == (f"请求体有 {HUNDRED_MIB} 字节；上限是 {settings.MAX_REQUEST_BYTES} 字节"
                             f"（{settings.MAX_REQUEST_BYTES // 1024} KiB）")
    assert_still_serving(server)


def test_expect_100_continue_gets_the_413_instead(server):
    exchange = Exchange(server.port, post_head("/api/runs", f"Content-Length: {HUNDRED_MIB}",
                                               "Expect: 100-continue"))
    assert_refused(*exchange.wait())
    assert_still_serving(server)


def test_a_100_mib_body_sent_anyway_is_thrown_away_not_written(server):
    """The client does not wait for the answer and streams 100 MiB: the 413 comes first, the
    bytes go nowhere, and no file is ever open in the server's temporary folder."""
    exchange = Exchange(server.port, post_head("/api/runs", f"Content-Length: {HUNDRED_MIB}"))
    seen: list[str] = []
    exchange.send(stream(HUNDRED_MIB), during=lambda: seen.extend(files_open_in(server.proc.pid, server.tmpdir)))
    assert_refused(*exchange.wait())
    assert exchange.sent_when_answered < 20 * MIB
    assert seen == []
    assert_still_serving(server)


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server):
    exchange = Exchange(server.port, post_head("/api/runs", "Transfer-Encoding: chunked"))
    seen: list[str] = []
    exchange.send(chunked(HUNDRED_MIB), during=lambda: seen.extend(files_open_in(server.proc.pid, server.tmpdir)))
    status, body, head = exchange.wait()
    assert_refused(status, body, head)
    assert "went over it as it was sent" in body["error"]
    assert seen == []
    # Refused while read: the answer came when about the limit had been sent, not 100 MiB.
    assert exchange.sent_when_answered < 20 * MIB
    assert_still_serving(server)


def test_a_body_within_the_limit_still_reaches_the_application(server):
    """Chunked or with a length, up to the limit: Django gets it (a JSON error, not a 413)."""
    small = b'{"code": "not json'
    exchange = Exchange(server.port, post_head("/api/format", "Transfer-Encoding: chunked", "Connection: close"))
    exchange.send([b"%x\r\n" % len(small) + small + b"\r\n", b"0\r\n\r\n"])
    status, body, _ = exchange.wait()
    assert status == 400 and "not valid JSON" in body["error"]
    exactly = b'"' + b"x" * (settings.MAX_REQUEST_BYTES - 2) + b'"'
    exchange = Exchange(server.port, post_head("/api/format", f"Content-Length: {len(exactly)}", "Connection: close"))
    exchange.send([exactly])
    status, body, _ = exchange.wait()
    assert status != 413, body
    assert_still_serving(server)


def test_plain_daphne_would_have_spooled_it_to_disk(web_server, tmp_path):
    """The check above can see a spooled body: daphne as it is keeps a chunked body in a
    temporary file in TMPDIR while it reads it."""
    tmpdir = tmp_path / "daphne-tmp"
    tmpdir.mkdir()
    daphne = web_server(base_env(TMPDIR=str(tmpdir)), module="daphne")
    exchange = Exchange(daphne.port, post_head("/api/runs", "Transfer-Encoding: chunked", "Connection: close"))
    seen: list[str] = []

    def look():
        time.sleep(0.01)
        seen.extend(files_open_in(daphne.proc.pid, tmpdir))

    exchange.send(chunked(4 * MIB, 256 * 1024), during=look)
    exchange.wait()
    assert seen, "no temporary file seen: the check cannot tell"
