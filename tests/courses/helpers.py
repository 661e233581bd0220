"""What the course tests share: hidden checks with a marker that must never reach a student, and
a few submissions of the square-function assignment."""

from __future__ import annotations

import json

# In the checks' source only: any response, event or page that holds it leaked the checks.
MARKER = "HIDDEN_CHECK_SOURCE_5523"
CHECKS = f"""
from jaxplay.grading import allclose, check
import numpy as np
EXPECTED_NOTE = "{MARKER}"
check("square of 3", allclose(square(3.0), 9.0), 2)
with check("keeps the shape", points=3):
    assert np.asarray(square(np.ones(3))).shape == (3,), "square(x) must have x's shape"
print("checks saw", EXPECTED_NOTE)
"""
DECLARED = [{"name": "square of 3", "points": 2.0}, {"name": "keeps the shape", "points": 3.0}]
STARTER = "def square(x):\n    ...\n"
CORRECT = "def square(x):\n    return x * x\n"
WRONG = "def square(x):\n    return x + x\n"


def result(passed: dict[str, bool] | None = None, *, student_status: str = "succeeded", error=None,
           log: str = "", outcome: str = "checked") -> dict:
    """A grade as the executor sends it (recorder.record_grade's second argument)."""
    from executor.runner import protocol

    passed = {"square of 3": True, "keeps the shape": True} if passed is None else passed
    points = {d["name"]: d["points"] for d in DECLARED}
    checks = [{"name": name, "passed": ok, "points": points.get(name, 1.0), "message": "" if ok else "wrong"}
              for name, ok in passed.items()]
    return protocol.grade_fields(checks, outcome, student_status=student_status, error=error, log=log)


def post(client, path: str, body=None, **extra):
    return client.post(path, json.dumps(body) if body is not None else "", content_type="application/json",
                       **extra)


def patch(client, path: str, body, **extra):
    return client.patch(path, json.dumps(body), content_type="application/json", **extra)


def bearer(secret: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def make_token(user) -> str:
    from accounts.actions import do_create_token

    return do_create_token(user, "script")[1]
