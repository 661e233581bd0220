"""The worker side: the Celery task, the pool of warm runners, the supervisor of one run, the
graded run's relay, the node's compile cache, and the sandbox (``sandbox/``) around the runner
(``runner/``, which runs inside it).

The web side may import these modules of it, and only these (``tests/unit/test_layers.py``
holds the list as ``SHARED`` and fails on any other): ``events``, ``registry``, ``runtimes``,
``shares``, ``submit``, ``sessionstate``, ``logs``, ``envvars``, ``celeryconf``, ``processes``, ``analyser.wire``,
``runner.protocol``, ``runner.grades`` and ``runner.bindings``. They import only each other, the
standard library, redis and celery: never the worker, the pool, the supervisor, the sandbox or
jax."""
