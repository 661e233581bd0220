"""Backups as an operator makes them (``manage.py backup`` and ``manage.py restore``, ops/backup.py),
on SQLite and on PostgreSQL: a database with accounts, runs and their events, snippets and a course
is backed up, lost, and restored equal, row for row; a restore over a database that moved on
brings it back to the backup, and the site can write again after it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from bench.stack import ROOT
from tests.ops.deployment import postgres_reachable, postgres_server

# Run in a process of its own with the database under test: what the site holds, a JSON list of
# every row (dumpdata), or some more rows.
SITE = r"""
import json, sys, django
django.setup()
from django.contrib.auth.models import User
from django.core.management import call_command
from courses.models import Course
from playground.models import Run, RunEvent
from snippets.models import Snippet

def seed(prefix):
    ann = User.objects.create_user(f"{prefix}ann", f"{prefix}ann@example.org", "a-long-password-1")
    bob = User.objects.create_user(f"{prefix}bob", "", "a-long-password-2")
    for n, (owner, status) in enumerate([(ann, "succeeded"), (None, "failed"), (bob, "queued")]):
        run = Run.objects.create(code=f"print({n})  # π ≈ 3.14", device="cpu", status=status, owner=owner,
                                 options={"timeit": n}, wall_ms=12.5 * n)
        for seq, kind in enumerate(["queued", "started", "stdout", "finished"][: 4 - n], start=1):
            RunEvent.objects.create(run=run, seq=seq, type=kind, data={"seq": seq, "type": kind, "text": "é\n"})
        Snippet.objects.create(slug=f"{prefix}s{n}", content_hash=f"{prefix}{n}".ljust(64, "0"), code=run.code,
                               device="cpu", run=run, owner=owner, title=f"snippet {n}")
    Course.objects.create(title=f"{prefix}JAX 101", created_by=ann)

for what in sys.argv[1:]:  # "seed:<prefix>", "state"
    if what.startswith("seed:"):
        seed(what.removeprefix("seed:"))
    elif what == "state":
        call_command("dumpdata", stdout=sys.stdout)
"""


def site(url: str, *args: str) -> str:
    return _run(url, [sys.executable, "-c", SITE, *args])


def manage(url: str, *args: str) -> str:
    return _run(url, [sys.executable, "manage.py", *args])


def _run(url: str, argv: list[str]) -> str:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "web.settings", "DEBUG": "0",
           "SECRET_KEY": "backup-test-" + "k" * 40}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{argv[1:3]} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


class Database:
    """An empty database of one engine, that a test can lose (``drop``) and have again (``create``)."""

    def __init__(self, engine: str, tmp_path: Path):
        self.engine = engine
        if engine == "sqlite":
            self.path = tmp_path / "site.sqlite3"
            self.url = f"sqlite:///{self.path}"
        else:
            self.name = f"backup_test_{uuid.uuid4().hex[:12]}"
            self.server = postgres_server()
            if not postgres_reachable(self.server):
                pytest.skip(f"no PostgreSQL server answers at {self.server}")
            self.url = with_database(self.server, self.name)
        self.create()

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as conn:
            conn.execute(sql)

    def create(self) -> None:
        if self.engine == "postgresql":
            self._admin(f'CREATE DATABASE "{self.name}"')

    def drop(self) -> None:
        if self.engine == "sqlite":
            for side in ("", "-wal", "-shm"):
                Path(f"{self.path}{side}").unlink(missing_ok=True)
        else:
            self._admin(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request, tmp_path):
    db = Database(request.param, tmp_path)
    yield db
    db.drop()


def test_a_lost_database_comes_back_from_its_backup_row_for_row(database, tmp_path):
    manage(database.url, "migrate", "--noinput", "-v0")
    before = json.loads(site(database.url, "seed:first-", "state"))
    assert {row["model"] for row in before} >= {"auth.user", "playground.run", "playground.runevent",
                                                "snippets.snippet", "courses.course"}

    backup = tmp_path / ("site.sqlite3.bak" if database.engine == "sqlite" else "site.dump")
    said = manage(database.url, "backup", str(backup))
    assert backup.stat().st_size > 0
    assert "2 accounts, 3 runs, 9 run events, 3 snippets, 1 courses" in said
    assert "Redis holds nothing a restore needs" in said and "event log" in said

    # The database is lost; an empty one takes its place, and the backup goes into it.
    database.drop()
    database.create()
    said = manage(database.url, "restore", str(backup), "--noinput")
    assert "manage.py migrate" in said
    assert json.loads(site(database.url, "state")) == before
    manage(database.url, "migrate", "--check")  # nothing left to apply: the schema came back whole

    # The site moves on after the backup (more rows), then is restored over: back to the backup.
    assert json.loads(site(database.url, "seed:later-", "state")) != before
    manage(database.url, "restore", str(backup), "--noinput")
    assert json.loads(site(database.url, "state")) == before

    # And writes again: new rows get keys of their own (PostgreSQL's sequences came back too).
    after = json.loads(site(database.url, "seed:after-", "state"))
    assert len([row for row in after if row["model"] == "auth.user"]) == 4


def test_a_restore_refuses_what_is_not_a_backup_of_its_engine(database, tmp_path):
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a backup at all")
    other = tmp_path / "other"
    other.write_bytes(b"PGDMP" + bytes(100) if database.engine == "sqlite" else b"SQLite format 3\x00" + bytes(100))
    env = {**os.environ, "DATABASE_URL": database.url, "DJANGO_SETTINGS_MODULE": "web.settings",
           "SECRET_KEY": "backup-test-" + "k" * 40}
    for path, message in ((junk, "is not a backup made by manage.py backup"),
                          (other, "then move the data with manage.py dumpdata and loaddata")):
        done = subprocess.run([sys.executable, "manage.py", "restore", str(path), "--noinput"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and message in done.stderr, done.stderr
