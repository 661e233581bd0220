"""What the notebook tests share besides fixtures: runs as the recorder stores them, and a POST
that checks its status."""

from __future__ import annotations

from executor import events as ev
from playground.models import Run, RunEvent


def saved_run(code: str, events: list[dict], *, owner=None, device: str = "cpu") -> Run:
    """A finished run with these events between its "started" and "finished"."""
    run = Run.objects.create(code=code, device=device, status=ev.SUCCEEDED, owner=owner)
    every = [{"type": "queued"}, {"type": "started", "jax_version": "0.12.0.1"}, *events,
             {"type": "finished", "status": "succeeded", "wall_ms": 3.0}]
    for seq, event in enumerate(every, 1):
        RunEvent.objects.create(run=run, seq=seq, type=event["type"], data={"seq": seq, **event})
    return run


def post(client, url: str, body, status: int | tuple = 200):
    response = client.post(url, body, content_type="application/json")
    statuses = status if isinstance(status, tuple) else (status,)
    assert response.status_code in statuses, response.content
    return response.json() if response.content else None
