"""A room through the real stack: thirty browsers signed out behind one address (one trusted
proxy, the same X-Forwarded-For for all) each load the page through daphne for their cookies,
open the run socket the page keeps, and press Run at once; with fair shares as deployed, every
run is accepted and ends succeeded. The stack is this file's own: shares on, its own Redis
database. What one client minting identities gets, and forged cookies: tests/courses/test_room.py."""

from __future__ import annotations

import pytest

from bench.room import press_run_together
from tests.conftest import own_stack

pytestmark = pytest.mark.django_db(transaction=True)

ROOM, SCHOOL = "198.51.100.77", "198.51.100.78"


@pytest.fixture(scope="module")
def room_stack(django_db_setup, django_db_blocker, tmp_path_factory):
    # Fair shares as deployed (web/settings.py's defaults): a person's 4 runs at once and 30 a
    # minute, the address's 8 for requests with no identity, the room's 40.
    with own_stack("room", 13, tmp_path_factory, TRUSTED_PROXIES="1", RUN_RATE_LIMIT_PER_MINUTE="30",
                   RUN_MAX_ACTIVE_PER_CLIENT="4", RUN_BUDGET_S_PER_HOUR="1800", RUN_BUDGET_S_PER_DAY="14400",
                   RUN_QUEUE_MAX="500") as stack:
        yield stack


def test_thirty_browsers_behind_one_address_press_run_at_once(room_stack):
    results = press_run_together(room_stack, 30, ROOM, "print(1)\n", timeout=150)
    assert not [r["error"] for r in results if "error" in r]
    replies = [r["reply"] for r in results]
    assert [reply.get("type") for reply in replies] == ["started_run"] * 30, [
        reply for reply in replies if reply.get("type") != "started_run"][:2]
    assert len({reply["run"]["id"] for reply in replies}) == 30
    for r in results:
        assert r["watched"].finished["status"] == "succeeded" and r["watched"].text() == "1\n", r["watched"].events
    # Each was its own browser's run, the room's slots all given back once they ended.
    for reply in replies:
        assert room_stack.wait_finished(reply["run"]["id"], timeout=60)["status"] == "succeeded"


def test_the_same_room_without_cookies_is_one_client_the_address(room_stack):
    """What the room above was before browsers had identities, and what a script still is: the
    address's own share, 8 at once, and a refusal that says so."""
    results = press_run_together(room_stack, 12, SCHOOL, "import time\ntime.sleep(3)\n", timeout=150, cookies=False)
    replies = [r["reply"] for r in results]
    assert [reply.get("type") for reply in replies].count("started_run") == 8, replies
    refused = [reply for reply in replies if reply.get("type") == "refused"]
    assert len(refused) == 4 and {reply["status"] for reply in refused} == {429}
    assert all(reply["error"].startswith("your address already has 8 runs queued or running (at most 8 at once)")
               for reply in refused)
    assert all("without the cookie this site's pages give each browser" in reply["error"] for reply in refused)
