#!/usr/bin/env bash
# The GPU check of an executor node: the worker itself on the GPU machine, against a Redis started
# there, runs submitted from a script there (python -m executor.submit), nothing else.
#
#   bash bench/gpu_check.sh prepare    here, with network: wheels and .debs the GPU image lacks,
#                                      into .device/ (ignored by git; carried to the machine)
#   bash bench/gpu_check.sh run        there: records in $OUT what the worker advertised, where
#                                      runs for gpu and gpu:<its kind> went, their latency, and
#                                      the article's speed test at 10000×10000
#
#   run
#    ├─ redis-server :$REDIS_PORT           (from the carried .debs)
#    ├─ celery -A executor.worker worker -Q exec.gpu   (EXECUTOR_KIND=gpu, /dev/nvidia* bound)
#    └─ python -m executor.submit …         (the runs, one after another)
#
# A dry run on a CPU machine: KIND=cpu PY=.venv/bin/python REDIS_PORT=6390 OUT=/tmp/check
# bash bench/gpu_check.sh run. The whole run stays within about 6 minutes; each wait has its own
# bound, and whatever happened is in $OUT either way.
set -u
cd "$(dirname "$0")/.."
CARRY=.device
KIND=${KIND:-gpu}
PY=${PY:-python3}
REDIS_PORT=${REDIS_PORT:-6379}
OUT=${OUT:-/tmp/gpu-check}

prepare() {
  set -e
  rm -rf "$CARRY" && mkdir -p "$CARRY/wheels" "$CARRY/debs"
  # What the GPU image lacks of requirements/executor.txt (it has numpy, jax with CUDA, click,
  # python-dateutil, six, typing-extensions and the runner's libraries).
  local pins
  pins=$(grep -E '^(celery|redis)' requirements/executor.txt | sed 's/\[redis\]//')
  # shellcheck disable=SC2086
  .venv/bin/pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d "$CARRY/wheels" \
    $pins kombu==5.7.0 billiard==4.3.2 vine==5.1.0 amqp==5.4.2 click-didyoumean==0.3.1 click-repl==0.4.1 \
    click-plugins==1.1.1.2 prompt_toolkit==3.0.53 wcwidth==0.9.4 tzlocal==5.4.5
  (cd "$CARRY/debs" && apt-get download redis-server redis-tools libjemalloc2 liblzf1 bubblewrap 2>/dev/null)
  du -sh "$CARRY"; ls "$CARRY"/*
}

run() {
  mkdir -p "$OUT"
  exec > >(tee "$OUT/check.log") 2>&1
  echo "== machine"; date -u; uname -r; nvidia-smi -L 2>&1 | head -4; "$PY" -V
  "$PY" -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())"
  echo "== carried packages"
  if ls "$CARRY"/wheels/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      "$CARRY"/wheels/*.whl && export PYTHONPATH=/tmp/site
  fi
  local root=/tmp/debroot
  for deb in "$CARRY"/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" "$root"; done
  export PATH="$root/usr/bin:$PATH" LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  command -v redis-server bwrap
  echo "== redis"
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --logfile "$OUT/redis.log" --dir /tmp || { echo "redis did not start"; return 1; }
  export REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
  local devices="" binds=""
  if [ "$KIND" = gpu ]; then
    devices=$(ls /dev/nvidia* 2>/dev/null | grep -v '/dev/nvidia-caps$' | paste -sd, -)
    # The driver's libraries wherever the machine has them (ldconfig knows), for the sandbox.
    binds=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF}' | xargs -r -n1 dirname | sort -u | paste -sd, -)
    [ -d /usr/local/nvidia ] && binds="${binds:+$binds,}/usr/local/nvidia"
    echo "devices: $devices"; echo "driver folders: $binds"
  fi
  local sandbox
  for sandbox in fork none; do
    echo "== worker (sandbox: $sandbox)"
    EXECUTOR_KIND=$KIND EXECUTOR_DEVICES=$devices EXECUTOR_RO_BINDS=$binds EXECUTOR_SANDBOX=$sandbox \
      EXECUTOR_ALLOW_UNSANDBOXED=$([ $sandbox = none ] && echo 1 || echo 0) EXECUTOR_POOL_SIZE=2 \
      RUN_MEMORY_MB_GPU=65536 RUN_MEMORY_MB_CPU=8192 RUN_WALL_S_GPU=180 RUN_WALL_S_CPU=180 LOG_FORMAT=text \
      timeout 420 "$PY" -m celery -A executor.worker worker -Q "exec.$KIND" -P threads -c 1 -n "$KIND@%h" \
      --without-gossip --without-mingle -l info > "$OUT/worker-$sandbox.log" 2>&1 &
    local worker=$! waited=0
    until "$PY" - "$KIND" <<'PY' 2>/dev/null
import os, sys, redis
from executor import registry
sys.exit(0 if registry.online_workers(redis.Redis.from_url(os.environ["REDIS_URL"]), sys.argv[1]) else 1)
PY
    do
      sleep 2; waited=$((waited + 2))
      if ! kill -0 $worker 2>/dev/null || [ $waited -ge 150 ]; then
        echo "no $KIND worker online after ${waited} s (sandbox $sandbox); its log ends:"; tail -n 25 "$OUT/worker-$sandbox.log"
        kill $worker 2>/dev/null; worker=""; break
      fi
    done
    [ -n "$worker" ] && break
  done
  [ -n "${worker:-}" ] || return 1
  echo "online after ${waited} s with sandbox $sandbox"; grep -m1 " is $KIND" "$OUT/worker-$sandbox.log"
  echo "== advertised (GET /api/devices says this)"
  local specific
  specific=$("$PY" - "$KIND" "$OUT/devices.json" <<'PY'
import json, os, sys, redis
from executor import registry
described = registry.describe_kind(redis.Redis.from_url(os.environ["REDIS_URL"]), sys.argv[1])
json.dump(described, open(sys.argv[2], "w"), indent=1)
print(json.dumps({k: described[k] for k in ("platform", "device_kind", "device_count", "memory_bytes",
                                             "jax_version", "jaxlib_version", "slots", "sandboxed")}), file=sys.stderr)
print(described["specific"][0]["device"] if described["specific"] else sys.argv[1])
PY
)
  echo "specific kind: $specific"
  "$PY" -m celery -A executor.worker inspect active_queues -t 5 2>&1 | tail -n 6
  echo "== runs"
  local submit=("$PY" -m executor.submit --summary --wall 170)
  # The quick runs under a 4 GiB cap (RLIMIT_DATA and the cgroup): CUDA's start-up must fit in
  # what a production GPU node would give a run.
  "${submit[@]}" --device "$specific" --memory-mb 4096 --repeat 5 bench/gpu/hello.py | tee "$OUT/runs.jsonl"
  "${submit[@]}" --device "$KIND" --memory-mb 4096 bench/gpu/hello.py | tee -a "$OUT/runs.jsonl"
  "${submit[@]}" --device "$specific" --memory-mb $([ "$KIND" = gpu ] && echo 65536 || echo 8192) \
    bench/gpu/speed_test.py bench/gpu/memory.py | tee -a "$OUT/runs.jsonl"
  echo "== summary"
  "$PY" - "$OUT/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
hello = [r for r in runs if r["snippet"].endswith("hello.py")]
print("runs:", len(runs), "statuses:", sorted({r["status"] for r in runs}))
print("where:", sorted({(r["device"], r["device_kind"], r["worker"]) for r in runs}))
print("hello median queued→started %.1f ms, queued→finished %.1f ms" % (
    statistics.median(r["queued_to_started_ms"] for r in hello[:5]),
    statistics.median(r["queued_to_finished_ms"] for r in hello[:5])))
for r in runs:
    if r["snippet"].endswith("speed_test.py"):
        for t in r["timings"]:
            print("speed test: %-32s mean %9.3f ms ± %.3f (%s loops × %s)" % (
                t["label"], t["mean_ms"], t["std_ms"] or 0, t["loops"], t["repeats"]))
        print("article (T4): NumPy 436 ms, jit 3.67 ms")
    if r["status"] != "succeeded":
        print("NOT succeeded:", r["snippet"], r["status"], r["message"], r["error"])
PY
  kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null
  redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bash bench/gpu_check.sh prepare|run" >&2; exit 2 ;;
esac
