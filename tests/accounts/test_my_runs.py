"""/me/runs/: one's own runs, newest first; Delete removes a finished run, but not one a snippet's
link shows as its saved output, nor one still going; Cancel stops a queued or running one (its
page may be long closed) through the same action as POST /api/runs/<id>/cancel."""

from __future__ import annotations

import pytest

from playground.models import Run, RunEvent
from snippets.models import Snippet

from .helpers import share

pytestmark = pytest.mark.django_db


def run_of(owner, code: str = "print(1)", status: str = "succeeded") -> Run:
    run = Run.objects.create(code=code, device="cpu", owner=owner, status=status)
    RunEvent.objects.create(run=run, seq=1, type="queued", data={"seq": 1, "type": "queued", "position": 1})
    return run


def test_it_lists_ones_own_runs_newest_first(alice_client, alice, bob):
    older = run_of(alice, "\nimport jax\nprint(jax.devices())", status="failed")
    newer = run_of(alice, "y = 2")
    theirs = run_of(bob, "print('bob was here')")
    page = alice_client.get("/me/runs/").content.decode()
    assert page.index("y = 2") < page.index("import jax") and "print(jax.devices())" not in page
    assert "status-failed" in page and "status-succeeded" in page
    assert "bob was here" not in page
    assert str(older.id) in page and str(newer.id) in page and str(theirs.id) not in page


def test_delete_removes_a_run_and_its_events(alice_client, alice):
    run = run_of(alice)
    response = alice_client.post(f"/me/runs/{run.id}/delete/", follow=True)
    assert response.redirect_chain == [("/me/runs/", 302)]
    assert "Run deleted" in response.content.decode()
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not RunEvent.objects.filter(run_id=run.pk).exists()
    assert alice_client.get(f"/api/runs/{run.id}").status_code == 404


def test_a_snippets_saved_run_is_kept_and_the_page_says_why(alice_client, alice):
    run = run_of(alice, "z = 3")
    snippet = share(alice, "z = 3")
    Snippet.objects.filter(pk=snippet.pk).update(run=run)
    page = alice_client.get("/me/runs/").content.decode()
    assert "Kept: the output of" in page and f"/s/{snippet.slug}" in page
    assert f"/me/runs/{run.id}/delete/" not in page

    response = alice_client.post(f"/me/runs/{run.id}/delete/", follow=True)
    assert f"saved output of the shared snippet /s/{snippet.slug}" in response.content.decode()
    assert Run.objects.filter(pk=run.pk).exists()


def test_a_run_still_going_is_not_deleted(alice_client, alice):
    run = run_of(alice, status="running")
    response = alice_client.post(f"/me/runs/{run.id}/delete/", follow=True)
    assert "has not finished yet" in response.content.decode()
    assert Run.objects.filter(pk=run.pk).exists()


def test_it_cannot_delete_someone_elses_run(alice_client, bob):
    theirs = run_of(bob)
    assert alice_client.post(f"/me/runs/{theirs.id}/delete/").status_code == 404
    assert Run.objects.filter(pk=theirs.pk).exists()


# Cancel ----------------------------------------------------------------------------------------

def test_a_run_still_going_offers_cancel_and_a_finished_one_delete(alice_client, alice):
    queued = run_of(alice, "q = 1", status="queued")
    running = run_of(alice, "r = 2", status="running")
    done = run_of(alice, "d = 3")
    page = alice_client.get("/me/runs/").content.decode()
    for run in (queued, running):
        assert f'action="/me/runs/{run.id}/cancel/"' in page
        assert f"/me/runs/{run.id}/delete/" in page  # the row's Delete, once the script saw it end
    assert 'aria-label="Cancel run q = 1"' in page and 'aria-label="Cancel run r = 2"' in page
    assert f"/me/runs/{done.id}/cancel/" not in page and 'aria-label="Delete run d = 3"' in page
    assert "my-runs.js" in page


def test_cancel_ends_a_queued_run_at_once(alice_client, alice):
    run = run_of(alice, status="queued")
    response = alice_client.post(f"/me/runs/{run.id}/cancel/", follow=True)
    assert response.redirect_chain == [("/me/runs/", 302)]
    page = response.content.decode()
    assert "Run cancelled" in page
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert RunEvent.objects.filter(run=run, type="finished").exists()
    assert "status-cancelled" in page and 'aria-label="Delete run print(1)"' in page


def test_cancel_of_a_running_run_asks_its_executor_to_stop_it(alice_client, alice):
    from executor import events as ev
    from playground.redis import get_redis

    run = run_of(alice, status="running")
    response = alice_client.post(f"/me/runs/{run.id}/cancel/", {"page": "1"}, follow=True)
    assert "Cancelling the run: it stops within a second or two" in response.content.decode()
    assert get_redis().exists(ev.cancel_key(str(run.id)))  # what the executor looks for each tick
    run.refresh_from_db()
    assert run.status == "running"


def test_cancel_of_a_run_that_already_ended_says_so(alice_client, alice):
    run = run_of(alice, status="succeeded")
    response = alice_client.post(f"/me/runs/{run.id}/cancel/", follow=True)
    assert "The run already finished (succeeded)" in response.content.decode()


def test_it_cannot_cancel_someone_elses_run(alice_client, bob):
    from executor import events as ev
    from playground.redis import get_redis

    theirs = run_of(bob, status="queued")
    assert alice_client.post(f"/me/runs/{theirs.id}/cancel/").status_code == 404
    assert alice_client.get(f"/me/runs/{theirs.id}/cancel/").status_code in (404, 405)
    theirs.refresh_from_db()
    assert theirs.status == "queued" and not get_redis().exists(ev.cancel_key(str(theirs.id)))

