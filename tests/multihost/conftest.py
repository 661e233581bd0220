"""The multi-host suite's fleet: every process of the playground on a host of its own (network
namespaces on a bridge, bench/hosts.py), Redis over TLS with a password, nginx in front of two
web processes.

    pytest (root namespace)
      ├─ nginx 127.0.0.1:<port>                         the tests' only way in, as a browser's
      ├─ jp-<tag>-redis   redis-server --tls-port 6380 --port 0 --requirepass …
      ├─ jp-<tag>-web     daphne ×2 (web1, web2), celery -A web worker -Q record -B
      └─ jp-<tag>-n1, n2  celery -A executor.worker (n3 is made for the node a test adds)

It needs root (namespaces and links); as root it runs, and fails when a tool is missing, saying
which. Everything it makes is removed after the module, also when a test fails; what a killed
earlier run left is removed before it starts (bench.hosts.sweep_leftovers).
"""

from __future__ import annotations

import pytest

from bench import hosts

# Long enough for the runs the scenarios keep going across a cut and a restart.
RUN_WALL_S = 60


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "multihost: executor nodes, Redis and web processes on hosts of their own (needs root)")


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    problem = hosts.can_make_hosts()
    if problem:
        pytest.fail(f"the multi-host suite cannot make its hosts: {problem} (scripts/test installs what is missing)")
    tmp = tmp_path_factory.mktemp("fleet")
    (tmp / "logs").mkdir()
    fleet = hosts.launch_fleet(tmp, tmp / "logs", nodes=2, RUN_WALL_S=RUN_WALL_S)
    try:
        yield fleet
    finally:
        fleet.close()
