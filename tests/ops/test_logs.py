"""Structured logs: one JSON object a line (ts, level, logger, message, process, run when known,
exc with the traceback), the run id on every line logged on behalf of a run (executor, recorder,
web), and LOG_FORMAT=text for people."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime

import pytest

from bench.stack import ROOT
from executor import logs


class Lines(logging.Handler):
    """What the configured handler would write: the formatted lines, through the run filter."""

    def __init__(self, fmt: str = "json", process: str = "test"):
        super().__init__()
        self.addFilter(logs.RunFilter(process))
        self.setFormatter(logs.formatter(fmt))
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(self.format(record))

    def objects(self) -> list[dict]:
        return [json.loads(line) for line in self.lines]


@pytest.fixture
def lines():
    handler = Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    level = root.level
    root.setLevel(logging.INFO)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_line_is_one_json_object_with_the_fields(lines):
    logging.getLogger("playground").warning("hello %s", "there")
    (line,) = lines.objects()
    assert line["message"] == "hello there"
    assert line["level"] == "WARNING"
    assert line["logger"] == "playground"
    assert line["process"] == "test"
    assert line["pid"] == os.getpid()
    assert datetime.fromisoformat(line["ts"]).tzinfo is not None
    assert "run" not in line and "exc" not in line
    assert "\n" not in lines.lines[0]


def test_the_run_is_on_every_line_of_its_context_and_the_traceback_in_exc(lines):
    with logs.run_context("run-1"):
        logging.getLogger("executor").info("one")
        try:
            raise ValueError("bad\nvalue")
        except ValueError:
            logging.getLogger("executor").exception("two")
    logging.getLogger("executor").info("after")
    one, two, after = lines.objects()
    assert one["run"] == two["run"] == "run-1"
    assert "run" not in after
    assert two["exc"].startswith("Traceback (most recent call last):")
    assert "ValueError: bad\nvalue" in two["exc"]
    assert len(lines.lines) == 3  # the traceback's newlines are escaped inside the one line


def test_a_run_set_in_one_thread_is_not_on_another_threads_lines(lines):
    inside = threading.Event()
    done = threading.Event()

    def a_run():
        with logs.run_context("run-a"):
            inside.set()
            done.wait(5)
            logging.getLogger("executor").info("in the run")

    thread = threading.Thread(target=a_run)
    thread.start()
    inside.wait(5)
    logging.getLogger("executor").info("elsewhere")
    done.set()
    thread.join()
    by_message = {line["message"]: line for line in lines.objects()}
    assert by_message["in the run"]["run"] == "run-a"
    assert "run" not in by_message["elsewhere"]


def test_extra_fields_are_kept(lines):
    logging.getLogger("web").info("refused", extra={"bytes": 5, "what": object()})
    (line,) = lines.objects()
    assert line["bytes"] == 5
    assert line["what"].startswith("<object")


def test_text_lines_name_the_run():
    handler = Lines("text")
    logger = logging.getLogger("tests.ops.text")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with logs.run_context("run-t"):
            logger.warning("careful")
    finally:
        logger.removeHandler(handler)
        logger.propagate = True
    assert handler.lines[0].endswith("WARNING tests.ops.text [run run-t] careful")


@pytest.mark.parametrize("argv, name", [
    (["/x/.venv/bin/daphne", "web.asgi:application"], "web"),
    (["/x/web/server.py", "-e", "tcp:port=1", "web.asgi:application"], "web"),
    (["/x/.venv/bin/celery", "-A", "web", "worker", "-Q", "record"], "recorder"),
    (["/x/lib/celery/__main__.py", "-A", "executor.worker", "worker"], "executor"),
    (["/x/.venv/bin/celery", "--app=executor.worker", "worker"], "executor"),
    (["manage.py", "migrate"], "manage.py migrate"),
])
def test_the_process_is_named_from_its_command_line(argv, name):
    assert logs.process_name(argv) == name


def test_the_executor_names_the_run_for_the_whole_execution(lines):
    from executor.execution import Executor

    class Probe:
        def _claim_and_execute(self, run_id, *args):
            logging.getLogger("executor").info("working on it")

    Executor.execute(Probe(), "run-e", "print(1)", {}, {})
    logging.getLogger("executor").info("between runs")
    working, between = lines.objects()
    assert working["run"] == "run-e"
    assert "run" not in between


def test_a_recorder_task_about_a_run_names_it(lines):
    from web.tasks import recorder_task

    @recorder_task("tests.ops.probe_run")
    def probe_run(run_id: str, events: list) -> None:
        logging.getLogger("playground").info("recording")

    @recorder_task("tests.ops.probe_sweep")
    def probe_sweep() -> None:
        logging.getLogger("playground").info("sweeping")

    probe_run("run-r", [])
    probe_run(run_id="run-k", events=[])
    probe_sweep()
    runs = [line.get("run") for line in lines.objects()]
    assert runs == ["run-r", "run-k", None]


@pytest.mark.django_db
def test_a_request_about_a_run_names_it(client, lines):
    run_id = str(uuid.uuid4())
    response = client.get(f"/api/runs/{run_id}")
    assert response.status_code == 404
    not_found = [line for line in lines.objects() if line["logger"] == "django.request"]
    assert not_found and not_found[-1]["run"] == run_id
    client.get("/api/openapi.json")
    logging.getLogger("playground").info("after")
    assert "run" not in lines.objects()[-1]


def settings_logging(env: dict) -> subprocess.CompletedProcess:
    code = ("import django, logging; django.setup(); from executor import logs\n"
            "with logs.run_context('run-s'):\n"
            "    logging.getLogger('playground').warning('a line')\n")
    base = {k: v for k, v in os.environ.items() if k != "LOG_FORMAT"}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**base, "DJANGO_SETTINGS_MODULE": "web.settings", **env})


def test_web_settings_log_json_by_default_and_text_when_asked():
    as_json = settings_logging({})
    line = json.loads(as_json.stderr.strip().splitlines()[-1])
    assert (line["message"], line["run"], line["logger"]) == ("a line", "run-s", "playground")
    as_text = settings_logging({"LOG_FORMAT": "text"})
    assert as_text.stderr.strip().endswith("WARNING playground [run run-s] a line")
    bad = settings_logging({"LOG_FORMAT": "yaml"})
    assert bad.returncode != 0 and "LOG_FORMAT" in bad.stderr


def json_lines(path) -> list[dict]:
    found = []
    for raw in path.read_text(errors="replace").splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # celery's banner, daphne's start-up prints
        if isinstance(line, dict):
            found.append(line)
    return found


def test_the_stack_logs_json_lines_with_the_run(live_stack):
    """Through the real processes: the executor's lines about a run, and the web's about a
    request that names one, carry its id."""
    status, run = live_stack.post("/api/runs", {"code": "print('hi')"})
    assert status == 201, run
    assert live_stack.wait_finished(run["id"])["status"] == "succeeded"
    missing = str(uuid.uuid4())
    assert live_stack.fetch(f"/api/runs/{missing}")[0] == 404
    deadline = time.monotonic() + 10
    while True:
        executor = json_lines(live_stack.logdir / "executor.log")
        web = json_lines(live_stack.logdir / "web.log")
        about_run = [line for line in executor if line.get("run") == run["id"]]
        web_missing = [line for line in web if line.get("run") == missing]
        if (len(about_run) >= 2 and web_missing) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert {line["process"] for line in executor} == {"executor"}
    assert any("started" in line["message"] for line in about_run), executor[-5:]
    assert any("ended" in line["message"] for line in about_run)
    assert web_missing and web_missing[0]["process"] == "web" and web_missing[0]["level"] == "WARNING"
    deadline = time.monotonic() + 10
    while True:
        recorder = json_lines(live_stack.logdir / "recorder.log")
        recorded = [line for line in recorder if line.get("run") == run["id"]]
        if any("batch stream" in line["message"] for line in recorded) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert {line["process"] for line in recorder} == {"recorder"}
    # The recorder's reader of the executors' batches (playground/batches.py) names the run too.
    assert any(line["message"].startswith("recorded ") and "batch stream" in line["message"] for line in recorded)


def test_the_run_argument_of_a_task():
    def about_a_run(run_id, events):
        pass

    def about_a_grading(grading_id):
        pass

    assert logs.run_argument(about_a_run, ("r1", []), {}) == "r1"
    assert logs.run_argument(about_a_run, (), {"run_id": "r2", "events": []}) == "r2"
    assert logs.run_argument(about_a_grading, (5,), {}) is None
