"""Backing up and restoring the database: one file, written and read by the database's own tools.

    manage.py backup FILE    SQLite: SQLite's online backup (a consistent copy while the site
                             writes), a SQLite database file. PostgreSQL: pg_dump's custom
                             format (compressed, consistent: one snapshot), no owners or grants
    manage.py restore FILE   the same file back: SQLite's backup API the other way; PostgreSQL:
                             pg_restore in one transaction (all of it or nothing), tables of the
                             database that the backup does not have dropped first

The file says what it is (its first bytes), so a restore into the other engine is refused with
how to move between them. Owners and grants are left out of a PostgreSQL backup: a restore
recreates the tables as whoever restores (the database's owner role), and the default privileges
of deploy/postgresql/roles.sql give the application's role its rows again.

The database is the record: Redis holds nothing a restore needs (``REDIS_NOT_NEEDED``).
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_CUSTOM_MAGIC = b"PGDMP"
ENGINE_NAMES = {"sqlite3": "SQLite", "postgresql": "PostgreSQL"}

# What Redis holds, and why a restored database does without it. Said by both commands.
REDIS_NOT_NEEDED = (
    ("the queues (exec.<kind>, record)",
     "a run still queued when the backup was made ends `lost` after RUN_QUEUE_TIMEOUT_S; none is "
     "run late or twice"),
    ("each run's event log (run:<id>:events)",
     "the recorder stores every event in the database; a run that was running then is completed "
     "from its log if Redis still has it, else the watchdog ends it `lost`"),
    ("heartbeats (executors:<kind>, executor:<name>)", "every executor beats again within 5 s"),
    ("rate limits and fair shares (ratelimit:*, quota:*)",
     "their windows start again; a slot of a run that never ended expires on its own"),
    ("claims, cancels and alive keys of runs (run:<id>:*)", "they expire on their own"),
    ("the channel layer and the analysers' requests", "open pages reconnect; nothing is kept"),
)


class BackupError(Exception):
    """A backup or restore that cannot go on; the message says why and what to do."""


def engine(settings_dict: dict) -> str:
    name = settings_dict["ENGINE"].rsplit(".", 1)[-1]
    if name in ("sqlite3", "postgresql"):
        return name
    raise BackupError(f"backups know SQLite and PostgreSQL, not {settings_dict['ENGINE']}")


def file_engine(path: Path) -> str:
    """Which database a backup file is of, from its first bytes."""
    with open(path, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head == SQLITE_MAGIC:
        return "sqlite3"
    if head.startswith(PG_CUSTOM_MAGIC):
        return "postgresql"
    raise BackupError(f"{path} is not a backup made by manage.py backup (neither a SQLite database "
                      "nor pg_dump's custom format)")


def backup(settings_dict: dict, path: Path) -> None:
    """Write a backup of the database to ``path`` (replaced only once complete)."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        if engine(settings_dict) == "sqlite3":
            _sqlite_copy(settings_dict["NAME"], partial, self_contained=True)
        else:
            _pg("pg_dump", settings_dict, ["--format=custom", "--no-owner", "--no-privileges",
                                           f"--file={partial}"])
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def restore(settings_dict: dict, path: Path, connection) -> None:
    """Replace the database's contents with the backup's. ``connection``: Django's, closed first
    (SQLite) or used to drop what the backup does not have (PostgreSQL)."""
    path = Path(path)
    ours, theirs = engine(settings_dict), file_engine(path)
    if ours != theirs:
        theirs, ours = ENGINE_NAMES[theirs], ENGINE_NAMES[ours]
        raise BackupError(f"{path} is a backup of a {theirs} database and DATABASE_URL names a {ours} one. Restore "
                          f"it into a {theirs} database, then move the data with manage.py dumpdata and loaddata")
    if ours == "sqlite3":
        problem = _sqlite_check(path)
        if problem:
            raise BackupError(f"{path} is a damaged SQLite database ({problem}); nothing was restored")
        connection.close()
        _sqlite_copy(path, Path(settings_dict["NAME"]))
        return
    archived = archive_tables(settings_dict, path)
    with connection.cursor() as cursor:
        extra = sorted(set(connection.introspection.table_names(cursor)) - archived)
        for table in extra:  # a newer version's: they would stop `migrate` after the restore
            cursor.execute(f"DROP TABLE IF EXISTS {connection.ops.quote_name(table)} CASCADE")
    connection.close()
    _pg("pg_restore", settings_dict, ["--clean", "--if-exists", "--no-owner", "--no-privileges",
                                      "--single-transaction", "--exit-on-error",
                                      f"--dbname={settings_dict['NAME']}", str(path)])


def archive_tables(settings_dict: dict, path: Path) -> set[str]:
    """The tables a pg_dump archive holds (its table of contents; also proves it readable)."""
    listing = _pg("pg_restore", settings_dict, ["--list", str(path)], connect=False)
    return set(re.findall(r"^\d+; \d+ \d+ TABLE \S+ (\S+) ", listing, flags=re.MULTILINE))


# -- SQLite ------------------------------------------------------------------------------------


def _sqlite_copy(source: str | Path, target: Path, *, self_contained: bool = False) -> None:
    """SQLite's online backup, page by page: a consistent copy even while others write (it
    starts again when they change a page it has copied). ``self_contained``: the copy in
    rollback-journal mode, one file with no -wal or -shm beside it."""
    src = sqlite3.connect(source, timeout=30)
    try:
        dst = sqlite3.connect(target, timeout=30)
        try:
            src.backup(dst)
            if self_contained:
                dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
    finally:
        src.close()


def _sqlite_check(path: Path) -> str | None:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)  # a backup: self-contained
    try:
        answer = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        db.close()
    return None if answer == "ok" else answer


# -- PostgreSQL --------------------------------------------------------------------------------

# libpq's own variables for what DATABASE_URL says, so that no password is on a command line.
_LIBPQ_OPTIONS = {"sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT",
                  "sslkey": "PGSSLKEY", "connect_timeout": "PGCONNECT_TIMEOUT"}


def _pg(tool: str, settings_dict: dict, args: list[str], connect: bool = True) -> str:
    program = shutil.which(tool)
    if program is None:
        raise BackupError(f"{tool} is needed for a PostgreSQL database (apt-get install postgresql-client, "
                          "of the server's major version or newer)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    if connect:
        env.update({k: str(v) for k, v in {
            "PGHOST": settings_dict.get("HOST"), "PGPORT": settings_dict.get("PORT"),
            "PGUSER": settings_dict.get("USER"), "PGPASSWORD": settings_dict.get("PASSWORD"),
            "PGDATABASE": settings_dict.get("NAME"),
        }.items() if v})
        for option, value in (settings_dict.get("OPTIONS") or {}).items():
            if option in _LIBPQ_OPTIONS:
                env[_LIBPQ_OPTIONS[option]] = str(value)
    with tempfile.TemporaryFile() as err:
        done = subprocess.run([program, *args], env=env, stdout=subprocess.PIPE, stderr=err)
        err.seek(0)
        said = err.read().decode(errors="replace").strip()
    if done.returncode:
        raise BackupError(f"{tool} failed (exit {done.returncode}): {said or 'no message'}")
    return done.stdout.decode(errors="replace")
