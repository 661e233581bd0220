"""The runtimes' catalog (runtimes/runtimes.toml, executor/runtimes.py) and how a run's runtime
becomes its queue (executor/registry.py): ids stable, retired ones aliased to their successor,
versions read from the lock files, the first runtime's queue the bare kind's."""

from __future__ import annotations


import pytest

from executor import registry, runtimes


def catalog_file(tmp_path, body: str):
    (tmp_path / "a.lock").write_text(
        "jax==0.5.0 \\\n    --hash=sha256:00\nnumpy==2.1.0\nflax[all]==0.10.0 ; python_version>'3'\n")
    path = tmp_path / "runtimes.toml"
    path.write_text(body)
    return path


def test_the_catalog_lists_three_runtimes_with_the_versions_their_locks_pin():
    cat = runtimes.catalog()
    assert cat.ids == ["jax-0.12.0.1", "jax-0.6.2", "jax-0.4.38", "host"] and cat.default == runtimes.FIRST
    # The fourth is an accelerator host's own JAX: no lock, nothing to build, versions read at start.
    offered = dict(cat.runtimes)
    host = offered.pop("host")
    assert host.environment == "host" and host.lock is None and host.packages == {}
    assert runtimes.is_built(host) and runtimes.build(host) == 0.0
    old = cat.runtimes["jax-0.4.38"]
    assert (old.jax, old.jaxlib, old.python) == ("0.4.38", "0.4.38", "3.12")
    assert old.libraries["optax"] == "0.2.4" and "jedi" not in old.libraries
    first = cat.runtimes[runtimes.FIRST]
    assert first.environment == "executor" and first.jax == "0.12.0.1" and first.default
    # Every lock pins JAX and jaxlib to the version its id names, with hashes.
    for rt in offered.values():
        assert rt.id == f"jax-{rt.jax}" and rt.jaxlib == rt.jax
        if rt.lock is not None:
            assert "--hash=sha256:" in rt.lock.read_text()


def retired_catalog(tmp_path) -> runtimes.Catalog:
    """One runtime, jax-0.5.0, that jax-0.4.0 retired into, as jax-0.3.0 retired into jax-0.4.0."""
    return runtimes.load(catalog_file(tmp_path, """
default = "jax-0.5.0"
[runtimes."jax-0.5.0"]
lock = "a.lock"
python = "3.12"
[retired]
"jax-0.3.0" = "jax-0.4.0"
"jax-0.4.0" = "jax-0.5.0"
"""))


def test_a_retired_id_runs_on_its_successor_and_says_so(tmp_path):
    cat = retired_catalog(tmp_path)
    runtime, note = cat.resolve("jax-0.3.0")
    assert runtime.id == "jax-0.5.0" and note == "runtime jax-0.3.0 is retired: this ran on its successor, jax-0.5.0"
    assert runtime.packages == {"jax": "0.5.0", "numpy": "2.1.0", "flax": "0.10.0"}
    assert cat.resolve(None) == (runtime, None) and cat.resolve("jax-0.5.0") == (runtime, None)
    with pytest.raises(runtimes.UnknownRuntime) as raised:
        cat.resolve("jax-9")
    assert str(raised.value) == "unknown runtime 'jax-9': use one of jax-0.5.0"
    with pytest.raises(runtimes.UnknownRuntime) as raised:
        cat.resolve("a" * 10_000)
    assert len(str(raised.value)) < 120  # an odd id is named, never echoed whole


@pytest.mark.parametrize("body, problem", [
    ('default = "a"\n[runtimes.a]\nlock = "a.lock"\n[retired]\na = "b"\n', "an id is never reused"),
    ('default = "b"\n[runtimes.a]\nlock = "a.lock"\n', "the default runtime 'b' is not among"),
    ('default = "A"\n[runtimes.A]\nlock = "a.lock"\n', "is not lower-case"),
    ('default = "a"\n[runtimes.a]\npython = "3.12"\n', "has neither a lock"),
])
def test_a_catalog_that_breaks_the_rules_is_refused(tmp_path, body, problem):
    with pytest.raises(ValueError, match=problem):
        runtimes.load(catalog_file(tmp_path, body))


def test_a_route_names_its_queue_and_the_first_runtime_keeps_the_bare_one():
    assert registry.route("cpu", runtimes.FIRST) == registry.route("cpu", None) == "cpu"
    assert registry.route("gpu:h200", "jax-0.4.38") == "gpu:h200@jax-0.4.38"
    assert registry.queue_name("cpu") == "exec.cpu"
    assert registry.queue_name("cpu@jax-0.4.38") == "exec.cpu@jax-0.4.38"
    assert registry.queue_name("gpu:h200@jax-0.4.38") == "exec.gpu.h200@jax-0.4.38"
    assert registry.parse_device("gpu:h200@jax-0.4.38") == ("gpu", "h200")
    assert registry.parse_route("gpu:h200@jax-0.4.38") == ("gpu:h200", "jax-0.4.38")
    assert registry.parse_route("cpu") == ("cpu", runtimes.FIRST)
    assert registry.queue_lists("cpu@jax-0.6.2")[1] == "exec.cpu@jax-0.6.2\x06\x163"


def test_workers_online_are_those_of_the_route_s_runtime(redis_client):
    redis_client.delete("executors:tpu", "executors:tpu:v9")
    registry.beat(redis_client, "tpu-new", "tpu", {"slots": 1})
    registry.beat(redis_client, "tpu-old", "tpu", {"slots": 1, "runtime": "jax-0.4.38"}, "v9")
    try:
        assert {w["name"] for w in registry.online_workers(redis_client, "tpu")} == {"tpu-new", "tpu-old"}
        assert [w["name"] for w in registry.online_workers(redis_client, "tpu@jax-0.4.38")] == ["tpu-old"]
        assert [w["name"] for w in registry.online_workers(redis_client, "tpu")
                if w.get("runtime", runtimes.FIRST) == runtimes.FIRST] == ["tpu-new"]
        assert registry.online_workers(redis_client, "tpu@jax-0.6.2") == []
        assert registry.runtimes_online(registry.online_workers(redis_client, "tpu")) == {
            runtimes.FIRST: ["tpu"], "jax-0.4.38": ["tpu"]}
        assert registry.describe_kind(redis_client, "tpu")["runtimes"] == sorted([runtimes.FIRST, "jax-0.4.38"])
    finally:
        registry.leave(redis_client, "tpu-new", "tpu")
        registry.leave(redis_client, "tpu-old", "tpu", "v9")


def test_a_default_run_needs_a_worker_of_the_default_runtime(redis_client):
    """Only an older runtime's worker of a kind online: a run of the default runtime is a 503 at
    once, not a run left waiting in exec.<kind> for a worker that never comes."""
    from playground import devices
    from web.errors import ActionError

    redis_client.delete("executors:tpu")
    registry.beat(redis_client, "tpu-old-only", "tpu", {"slots": 1, "runtime": "jax-0.4.38"})
    try:
        devices.check_online("tpu", "jax-0.4.38")  # served
        with pytest.raises(ActionError) as refused:
            devices.check_online("tpu", runtimes.FIRST)
        assert refused.value.status == 503 and runtimes.FIRST in refused.value.message
    finally:
        registry.leave(redis_client, "tpu-old-only", "tpu")


def test_a_removed_name_says_what_replaced_it_and_where_it_still_runs():
    import types

    from executor.runner.explain import explanation

    jax = types.ModuleType("jax")
    jax.__version__ = "0.12.0.1"
    kept = explanation(AttributeError("no tree_map", name="tree_map", obj=jax))
    assert "use `jax.tree.map` instead" in kept and "jax-0.4.38 runtime, which still has it" in kept
    gone = explanation(AttributeError("no xla_computation", name="xla_computation", obj=jax))
    assert "compiler_ir('hlo')" in gone and "runtime" not in gone  # 0.4.38 has no xla_computation either
    jax.__version__ = "0.4.38"
    assert "runtime" not in explanation(AttributeError("x", name="tree_reduce", obj=jax))


def test_a_stored_retired_id_runs_on_its_successor(tmp_path, monkeypatch):
    from playground import runtimes as web_runtimes

    cat = retired_catalog(tmp_path)
    monkeypatch.setattr(runtimes, "catalog", lambda: cat)
    assert web_runtimes.current("jax-0.4.0") == "jax-0.5.0" and web_runtimes.current(None) == "jax-0.5.0"
    assert web_runtimes.check_runtime("jax-0.4.0") == (
        "jax-0.5.0", "runtime jax-0.4.0 is retired: this ran on its successor, jax-0.5.0")
    assert web_runtimes.jax_of("jax-0.4.0") == "0.5.0"
