"""The run a request concerns, for its log lines: a view whose URL names a run (``run_id``) logs
with it (executor/logs.py puts it on every line as ``run``)."""

from __future__ import annotations

from executor import logs


class RunLogMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        # Nothing of an earlier request of this thread (a test client's) leaks into this one.
        logs.set_run(None)
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        run_id = view_kwargs.get("run_id")
        if run_id:
            # Left set after the view: Django logs a 4xx or 5xx answer after the middleware.
            logs.set_run(run_id)
        return None
