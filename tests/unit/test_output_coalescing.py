"""How the supervisor groups a run's output into events (executor/supervisor.py ``pump``), with
real pipes and a clock the test moves: a print()'s text and newline, written apart, are one event
even when the supervisor itself was kept from running past the wait for an open line; a line left
open (a prompt) still goes alone once that wait is over."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from executor import supervisor
from executor.sandbox import Limits


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def supervised(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(supervisor.time, "monotonic", clock)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ev_r, ev_w = os.pipe()
    proc = SimpleNamespace(stdout=SimpleNamespace(fileno=lambda: out_r), stderr=SimpleNamespace(fileno=lambda: err_r))
    runner = SimpleNamespace(proc=proc, event_fd=ev_r, event_buffer=b"")
    sent: list[tuple[str, dict]] = []
    s = supervisor.Supervision(runner, launcher=None, limits=Limits(), emit=lambda type_, **f: sent.append((type_, f)),
                               should_cancel=lambda: False, tick=lambda: None, tick_every_s=1.0)
    yield SimpleNamespace(s=s, clock=clock, out=out_w, sent=sent)
    for fd in (out_r, out_w, err_r, err_w, ev_r, ev_w):
        os.close(fd)


def texts(sent) -> list[str]:
    return [fields["text"] for type_, fields in sent if type_ == "stdout"]


def test_a_line_whose_end_came_while_the_supervisor_was_stalled_is_one_event(supervised):
    s, clock = supervised.s, supervised.clock
    os.write(supervised.out, b"hel")
    s.pump(0)  # reads "hel": an open line, kept
    assert texts(supervised.sent) == []
    os.write(supervised.out, b"lo\n")  # written at once, but the supervisor does not run...
    clock.now += 1.0  # ...for a second
    s.pump(0)
    clock.now += supervisor.COALESCE_MAX_S
    s.pump(0)
    assert texts(supervised.sent) == ["hello\n"]


def test_a_line_left_open_goes_alone_after_its_wait(supervised):
    s, clock = supervised.s, supervised.clock
    os.write(supervised.out, b"prompt> ")
    s.pump(0)
    clock.now += supervisor.OPEN_LINE_MAX_S / 2
    s.pump(0)
    assert texts(supervised.sent) == []  # not yet: its end may be coming
    clock.now += supervisor.OPEN_LINE_MAX_S
    s.pump(0)
    assert texts(supervised.sent) == ["prompt> "]
