"""Log lines of every process (web, recorder, executor), as JSON or as text, with the run they
concern. Standard library only: the executor side uses it without Django, and web/settings.py
names it in LOGGING.

    {"ts": "2026-12-01T03:40:12.345678+00:00", "level": "WARNING", "logger": "executor",
     "message": "...", "process": "executor", "pid": 4121, "run": "6f1c...", "exc": "Traceback ..."}

``run`` is there while code runs on behalf of a run: the executor sets it for a run's whole
execution, the recorder for a task about one run, the web side in a request or websocket that
names one (``with run_context(run_id):`` or ``set_run``). ``exc`` is the traceback, when any.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

FORMATS = ("json", "text")

_run: contextvars.ContextVar[str | None] = contextvars.ContextVar("log_run", default=None)


def current_run() -> str | None:
    return _run.get()


def set_run(run_id) -> contextvars.Token:
    """The run the lines of this context concern from now on (``None``: none); reset with the
    token (``reset_run``) where the context outlives the run."""
    return _run.set(None if run_id is None else str(run_id))


def reset_run(token: contextvars.Token) -> None:
    _run.reset(token)


@contextmanager
def run_context(run_id) -> Iterator[None]:
    token = set_run(run_id)
    try:
        yield
    finally:
        _run.reset(token)


def run_argument(fn, args, kwargs) -> str | None:
    """The run a call to ``fn`` is about: its ``run_id`` argument (the first parameter, or by
    keyword), else ``None``. For Celery's task_prerun signal, whose lines (Celery's own
    "succeeded" too) then name the run."""
    if kwargs and kwargs.get("run_id"):
        return str(kwargs["run_id"])
    try:
        first = next(iter(inspect.signature(fn).parameters), None)
    except (TypeError, ValueError):
        return None
    return str(args[0]) if first == "run_id" and args else None


def process_name(argv: list[str] | None = None) -> str:
    """What this process is, from its command line: ``web`` (daphne, web.server), ``recorder``
    (celery -A web), ``executor`` (celery -A executor.worker), ``manage.py <command>``, else the
    program's name."""
    argv = list(sys.argv if argv is None else argv) or [""]
    path = argv[0]
    program = os.path.basename(path)
    if program == "__main__.py":  # python -m <package>
        program = os.path.basename(os.path.dirname(path))
    elif path.endswith(os.path.join("web", "server.py")):  # python -m web.server
        program = "web.server"
    if program in ("daphne", "web.server"):
        return "web"
    if program == "celery":
        app = _option(argv, "-A", "--app") or ""
        if app.split(".")[0] == "executor":
            return "executor"
        if app.split(".")[0] == "web":
            return "recorder"
        return "celery"
    if program in ("manage.py", "django-admin"):
        return f"manage.py {argv[1]}" if len(argv) > 1 else "manage.py"
    return program or "python"


def _option(argv: list[str], short: str, long: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg in (short, long) and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(long + "="):
            return arg.split("=", 1)[1]
        if arg.startswith(short) and len(arg) > len(short) and not arg.startswith("--"):
            return arg[len(short):]
    return None


class RunFilter(logging.Filter):
    """Puts the current run (``record.run``, ``None`` when none) and the process's name on every
    record that passes through the handler it is attached to."""

    def __init__(self, process: str | None = None):
        super().__init__()
        self.process = process or process_name()

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "run"):
            record.run = _run.get()
        record.process_name = self.process
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ts, level, logger, message, process, pid, run (when known), exc
    (the traceback, when any), and whatever ``extra`` the call gave that JSON can carry."""

    _standard = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
        "message", "asctime", "run", "process_name", "taskName"}

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="microseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "process": getattr(record, "process_name", None) or process_name(),
            "pid": record.process,
        }
        run = getattr(record, "run", None) or _run.get()
        if run:
            line["run"] = run
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exc"] = record.exc_text
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        for key, value in vars(record).items():
            if key not in self._standard and not key.startswith("_") and key not in line:
                line[key] = value if isinstance(value, str | int | float | bool | None) else repr(value)
        return json.dumps(line, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """For people: ``2026-12-01 03:40:12,345 WARNING executor [run 6f1c...] message``."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s%(run_part)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        run = getattr(record, "run", None) or _run.get()
        record.run_part = f" [run {run}]" if run else ""
        return super().format(record)


def formatter(fmt: str = "json") -> logging.Formatter:
    """The formatter of a LOG_FORMAT value (``json`` or ``text``)."""
    if fmt not in FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return JsonFormatter() if fmt == "json" else TextFormatter()


def dict_config(fmt: str = "json", level: str = "INFO", process: str | None = None) -> dict:
    """A ``logging.config.dictConfig`` configuration: one handler on stderr, with the run filter
    and the formatter of ``fmt``, on the root logger (web/settings.py's LOGGING)."""
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"run": {"()": RunFilter, "process": process}},
        "formatters": {"main": {"()": formatter, "fmt": fmt}},
        "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["run"], "formatter": "main"}},
        "root": {"handlers": ["console"], "level": level},
    }


def configure(fmt: str = "json", level: str | int = "INFO", process: str | None = None) -> None:
    """Configure the root logger as ``dict_config`` says (the executor worker calls this)."""
    import logging.config

    logging.config.dictConfig(dict_config(fmt, level, process))


def name_runs_in_task_logs() -> None:
    """Every line a Celery task logs, Celery's own "succeeded" and failures included, names the
    run the task is about (its ``run_id`` argument). Both Celery apps call this once."""
    from celery import signals

    def started(task=None, args=None, kwargs=None, **_):
        set_run(run_argument(task.run, args or (), kwargs or {}) if task is not None else None)

    def ended(**_):
        set_run(None)

    signals.task_prerun.connect(started, weak=False, dispatch_uid="executor.logs.task_started")
    signals.task_postrun.connect(ended, weak=False, dispatch_uid="executor.logs.task_ended")
