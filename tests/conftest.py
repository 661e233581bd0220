"""Fixtures that start the real stack: daphne, a recorder worker (with the watchdog's beat) and a
CPU executor worker, as subprocesses against the machine's Redis and the test database.

    pytest
      ├─ python -m web.server web.asgi    (daphne: HTTP + websockets, port chosen at random)
      ├─ celery -A web worker -Q record -B
      └─ celery -A executor.worker worker -Q exec.cpu -P threads
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shutil
import signal
import tempfile
import time

import pytest

from bench.stack import Stack
from tests.testenv import QUOTAS_OFF

TEST_REDIS_URL = os.environ["TEST_REDIS_URL"]  # set by tests/testenv.py


def sandbox_backend() -> str:
    """The real sandbox wherever this machine has it; tests never run hostile code without it."""
    from executor.sandbox import LAUNCHERS

    if "fork" in LAUNCHERS and shutil.which("bwrap"):
        return "fork"
    return "none"


def database_url(db_settings: dict) -> str:
    engine = db_settings["ENGINE"]
    if engine.endswith("sqlite3"):
        return f"sqlite:///{db_settings['NAME']}"
    if engine.endswith("postgresql"):
        host = db_settings.get("HOST") or "127.0.0.1"
        port = db_settings.get("PORT") or 5432
        user = db_settings.get("USER") or "postgres"
        password = db_settings.get("PASSWORD") or ""
        auth = f"{user}:{password}@" if password else f"{user}@"
        return f"postgres://{auth}{host}:{port}/{db_settings['NAME']}"
    raise RuntimeError(f"tests do not know how to share database engine {engine}")


def pytest_collection_modifyitems(items):
    """A test on the live stack needs the test database (the stack writes to it) and real
    commits (the stack's processes cannot see a test's open transaction)."""
    for item in items:
        if "live_stack" in getattr(item, "fixturenames", ()):
            if not item.get_closest_marker("django_db"):
                item.add_marker(pytest.mark.django_db(transaction=True))
            # Torn down before the database is flushed (the database fixture is set up first).
            item.add_marker(pytest.mark.usefixtures("_recording_settled"))


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """The test database, with the connection that in-process websocket consumers keep open
    (web/db.py) closed before it is dropped."""
    yield
    close_async_database_connections()


@pytest.fixture(scope="session", autouse=True)
def _flush_tables_in_lock_order():
    """Between tests the database is flushed with one TRUNCATE of every table, which locks them
    in the order Django lists them, and Django lists them from a set: a different order in each
    process (string hashing is randomised). Writers in the stack lock a run before its events, so
    a flush that locked the events first could deadlock with a batch still being recorded. Listed
    in sorted order (``playground_run`` before ``playground_runevent``), the two only ever wait."""
    from django.db.backends.base.introspection import BaseDatabaseIntrospection
    from django.test.testcases import TransactionTestCase

    unordered = BaseDatabaseIntrospection.django_table_names
    teardown = TransactionTestCase._fixture_teardown

    def django_table_names(self, *args, **kwargs):
        return sorted(unordered(self, *args, **kwargs))

    def fixture_teardown(self):
        # No one order suits every writer (a grade locks its grading, then the submission and
        # its assignment; a submission is inserted before its grading), so a writer still at
        # work when the test ends may meet the TRUNCATE in a deadlock. PostgreSQL then aborts
        # one of the two; when that is the flush, it goes again once the writer is through.
        for attempt in range(5):
            try:
                return teardown(self)
            except Exception as exc:
                if attempt == 4 or "deadlock detected" not in str(exc.__cause__ or exc):
                    raise
                time.sleep(0.5)

    BaseDatabaseIntrospection.django_table_names = django_table_names
    TransactionTestCase._fixture_teardown = fixture_teardown
    yield
    BaseDatabaseIntrospection.django_table_names = unordered
    TransactionTestCase._fixture_teardown = teardown


@pytest.fixture
def _recording_settled(redis_client):
    """After a test on the live stack: wait until the recorder has written every run's last
    event, so that the flush that follows does not race the stack's writes into the next test."""
    yield
    import time
    import warnings

    from courses.models import Grading
    from executor import events as ev
    from playground.models import Run, RunEvent

    deadline = time.monotonic() + 30
    while True:
        unsettled = []
        for run_id, status in Run.objects.values_list("id", "status"):
            logged = int(redis_client.get(ev.seq_key(str(run_id))) or 0)
            if status not in ev.TERMINAL_STATUSES or RunEvent.objects.filter(run_id=run_id).count() < logged:
                unsettled.append(str(run_id))
        # A graded run's grade, or its settling when none came (within the grace).
        unsettled += [f"grading of {run_id}" for run_id in
                      Grading.objects.exclude(status="graded").values_list("run_id", flat=True)]
        if not unsettled:
            return
        if time.monotonic() > deadline:
            warnings.warn(f"runs still being recorded when the test ended: {unsettled}", stacklevel=2)
            return
        time.sleep(0.1)


@pytest.fixture(scope="session")
def redis_client():
    import redis

    client = redis.Redis.from_url(TEST_REDIS_URL)
    client.flushdb()
    return client


@functools.cache
def compile_cache_root() -> str:
    """The suite's own compile caches (executor/compilecache.py), gone when it ends: a run's
    compilations are not loaded from another suite's, or the host's."""
    root = tempfile.mkdtemp(prefix="jaxplay-compile-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


def stack_env(redis_url: str = TEST_REDIS_URL, **extra) -> dict:
    """The environment of a test stack's processes: the test database, ``redis_url``."""
    from django.conf import settings

    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/root"),
        "LANG": "C.UTF-8",
        "DJANGO_SETTINGS_MODULE": "web.settings",
        "DATABASE_URL": database_url(settings.DATABASES["default"]),
        "REDIS_URL": redis_url,
        # The suite's key (tests/testenv.py): sessions made in the test process are valid there.
        "SECRET_KEY": settings.SECRET_KEY,
        "RUN_RATE_LIMIT_PER_MINUTE": "0",
        **QUOTAS_OFF,
        "RUN_WALL_S": "60",  # room for the 40 s quiet run; runs that test limits set their own
        "WATCHDOG_EVERY_S": "1",
        "EXECUTOR_SANDBOX": sandbox_backend(),
        "EXECUTOR_ALLOW_UNSANDBOXED": "1" if sandbox_backend() == "none" else "0",
        "EXECUTOR_POOL_SIZE": "2",
        # A shared stack's node keeps the sessions of earlier tests (idle for 20 minutes) while the
        # database those tests made them in is emptied between tests: the web side then sees room
        # the node has not, and a new session's first cell found the node full. Room for a
        # module's worth of notebook tests on top of what the earlier ones left.
        "EXECUTOR_MAX_SESSIONS": "32",
        "EXECUTOR_COMPILE_CACHE_DIR": compile_cache_root(),
        # Every runner checks what it sends against the protocol's declaration (exit 70 if not).
        "EXECUTOR_CHECK_PROTOCOL": "1",
        # The editor's analysers start only for the tests of the editor (each imports jax).
        "ANALYSER_PROCESSES": "0",
        "PYTHONUNBUFFERED": "1",
        **{k: str(v) for k, v in extra.items()},
    }


@contextlib.contextmanager
def own_stack(name: str, redis_db: int, tmp_path_factory, **env):
    """A whole stack of a test module's own, on the test database: its own Redis database
    (``redis_db``, emptied first), and ``env`` over the suite's environment (``stack_env``)."""
    import redis

    url = TEST_REDIS_URL.rsplit("/", 1)[0] + f"/{redis_db}"
    redis.Redis.from_url(url).flushdb()
    stack = Stack.launch(stack_env(url, **env), tmp_path_factory.mktemp(f"{name}-stack-logs"))
    try:
        yield stack
    finally:
        stack.stop()


@pytest.fixture(scope="session")
def live_stack(django_db_setup, django_db_blocker, redis_client, tmp_path_factory):
    """The whole playground, running, on the test database."""
    stack = Stack.launch(stack_env(), tmp_path_factory.mktemp("stack-logs"))
    try:
        yield stack
    finally:
        stack.stop()
        close_async_database_connections()


# A second CPU executor posing as a GPU kind through configuration (EXECUTOR_DEVICE_KIND): it
# consumes exec.gpu and exec.gpu.test, so routing and the device picker can be tried on this machine.
POSING = "gpu:test"


@pytest.fixture(scope="module")
def posing_gpu_worker(live_stack, redis_client):
    """The posing worker, beating every second; stopped (and forgotten) after the module."""
    from executor import registry

    live_stack.start_executor("gpu-test", device=POSING, EXECUTOR_HEARTBEAT_S="1", EXECUTOR_POOL_SIZE="1",
                              EXECUTOR_CONCURRENCY="1")
    try:
        yield live_stack.wait_online(POSING)
    finally:
        if "gpu-test" in live_stack.procs:
            live_stack.kill("gpu-test", signal.SIGTERM)
        # Killed workers say no goodbye: forget them, so that later tests see the kind offline.
        for name in redis_client.zrange("executors:gpu", 0, -1):
            registry.leave(redis_client, name.decode(), "gpu", "test")


# A second CPU executor of an older runtime (EXECUTOR_RUNTIME): it consumes exec.cpu@jax-0.4.38.
OLD_RUNTIME = "jax-0.4.38"


@pytest.fixture(scope="module")
def old_runtime_worker(live_stack, redis_client):
    """A worker of OLD_RUNTIME, beating every second; stopped (and forgotten) after the module."""
    from executor import registry

    live_stack.start_executor("old-jax", EXECUTOR_RUNTIME=OLD_RUNTIME, EXECUTOR_HEARTBEAT_S="1",
                              EXECUTOR_POOL_SIZE="1", EXECUTOR_CONCURRENCY="1")
    try:
        yield live_stack.wait_runtime(OLD_RUNTIME)
    finally:
        if "old-jax" in live_stack.procs:
            live_stack.kill("old-jax", signal.SIGTERM)
        for worker in registry.online_workers(redis_client, f"cpu@{OLD_RUNTIME}", window=3600):
            registry.leave(redis_client, worker["name"], "cpu")


# A second CPU executor posing as a TPU node of one exclusive chip (executor/chips.py), on a
# stand-in device (executor/runner/exclusive.py): a lock file its chip's runner flocks, as libtpu
# takes its lockfile, and an open of STANDIN_OPEN_MS.
STANDIN = "tpu:standin"
STANDIN_OPEN_MS = 400


@pytest.fixture(scope="module")
def standin_tpu(live_stack, redis_client):
    """The stand-in TPU worker, beating every second; stopped (and forgotten) after the module."""
    from executor import registry

    folder = tempfile.mkdtemp(prefix="jaxplay-standin-", dir="/var/tmp")
    os.chmod(folder, 0o755)
    live_stack.start_executor("tpu-standin", device=STANDIN, EXECUTOR_HEARTBEAT_S="1", EXECUTOR_CONCURRENCY="3",
                              EXECUTOR_EXCLUSIVE_DEVICES="1", EXECUTOR_STANDIN_DEVICE=folder,
                              EXECUTOR_STANDIN_OPEN_MS=str(STANDIN_OPEN_MS), EXECUTOR_RO_BINDS=folder,
                              ACCELERATOR_SESSION_IDLE_S="60")
    try:
        yield live_stack.wait_online(STANDIN)
    finally:
        if "tpu-standin" in live_stack.procs:
            live_stack.kill("tpu-standin", signal.SIGTERM)
        for name in redis_client.zrange("executors:tpu", 0, -1):
            registry.leave(redis_client, name.decode(), "tpu", "standin")
        shutil.rmtree(folder, ignore_errors=True)


def close_async_database_connections() -> None:
    """Close the database connection of the thread where in-process websocket consumers ran their
    queries (asgiref's shared executor thread): left open, it keeps the test database from being
    dropped at the end of the session."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    asyncio.run(sync_to_async(connections.close_all)())
