"""The runner: plain Python + numpy + jax, executed once per run inside the sandbox.

It imports nothing from the rest of the project (only relative imports), so the sandbox can
bind this folder alone and the user's code cannot read the project's source. Protocol
(``protocol.py``, the one definition; ``main.py`` says what a runner becomes for each request):

    supervisor ──stdin: one request line {"op": "run", "code", "options", "wall_s"}──▶ runner
    runner ──event fd: JSON lines (ready, compiled, timing, display, error, exit)──▶ supervisor
    runner ──fd 1 / fd 2: the snippet's raw stdout / stderr──▶ supervisor

Run by itself (no Django, no Celery) with ``python -m executor.local snippet.py``.
"""
