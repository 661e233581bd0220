"""Loaded as a pytest plugin (``-p tests.testenv``) before Django reads its settings: the test
suite's environment, so the in-process side and the stack's subprocesses agree."""

import os

# Tests use their own Redis database so they never see a developer's runs.
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
os.environ["REDIS_URL"] = os.environ["TEST_REDIS_URL"]
os.environ["RUN_RATE_LIMIT_PER_MINUTE"] = "0"
os.environ["WATCHDOG_EVERY_S"] = "1"
# Settings fail closed without DEBUG=1: the suite runs as production does, with a key of its own.
os.environ.setdefault("SECRET_KEY", "test-suite-secret-key-not-for-production-" + "x" * 20)
# Fair shares are off, as the rate limit is: the suite starts many runs from one address at once.
# tests/integration/test_quotas.py turns them on for its own stack and settings.
QUOTAS_OFF = {"RUN_MAX_ACTIVE_PER_CLIENT": "0", "RUN_BUDGET_S_PER_HOUR": "0", "RUN_BUDGET_S_PER_DAY": "0",
              "RUN_QUEUE_MAX": "0"}
os.environ.update(QUOTAS_OFF)
