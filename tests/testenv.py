"""Loaded as a pytest plugin (``-p tests.testenv``) before Django reads its settings: the test
suite's environment, so the in-process side and the stack's subprocesses agree."""

import os

# Tests use their own Redis database so they never see a developer's runs.
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ["REDIS_URL"] = os.environ["TEST_REDIS_URL"]
os.environ["RUN_RATE_LIMIT_PER_MINUTE"] = "0"
os.environ["WATCHDOG_EVERY_S"] = "1"
