#!/usr/bin/env bash
# The TPU check of an executor node: the real Celery worker on the TPU host, on the host's own
# Python and JAX (runtime "host"), against a redis-server listening on a unix socket (such hosts
# may allow no TCP at all), and runs submitted from the host (python -m bench.accelerator_check).
#
#   bash bench/tpu_check.sh prepare    here, with a package registry: the wheels (for the host's
#                                      Python 3.11) and .debs the TPU image lacks, into .device/
#                                      (ignored by git; carried to the machine)
#   bash bench/tpu_check.sh run        there: records in $OUT what the worker advertised, its log,
#                                      and bench.accelerator_check's figures (check.json, a table)
#
#   run
#    ├─ redis-server --unixsocket /tmp/tpu-check/redis.sock   (from the carried .debs)
#    ├─ celery -A executor.worker worker -Q exec.tpu   (EXECUTOR_KIND=tpu, EXECUTOR_RUNTIME=host;
#    │                                                   bwrap where it can start, else no sandbox)
#    └─ python -m bench.accelerator_check --device tpu
#
# A dry run on a CPU machine: KIND=cpu PY=.venv/bin/python OUT=/tmp/check bash bench/tpu_check.sh run
set -u
cd "$(dirname "$0")/.."
CARRY=.device
KIND=${KIND:-tpu}
# The host's own interpreter, not one a version file in this checkout would select.
PY=${PY:-$(command -v /usr/bin/python3 || command -v python3)}
OUT=${OUT:-/tmp/tpu-check}
RUN=/tmp/tpu-check
SOCK=$RUN/redis.sock

prepare() {
  set -e
  rm -rf "$CARRY" && mkdir -p "$CARRY/wheels" "$CARRY/debs"
  # What the TPU image lacks of requirements/executor.txt for the worker (it has jax, jaxlib,
  # libtpu, numpy and scipy): Celery and its own needs, redis-py.
  local pins
  pins=$(grep -E '^(celery|redis|hiredis)' requirements/executor.txt | sed 's/\[redis\]//')
  # shellcheck disable=SC2086
  .venv/bin/pip download -q --no-deps --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$CARRY/wheels" \
    $pins kombu==5.7.0 billiard==4.3.2 vine==5.1.0 amqp==5.4.2 click==8.3.1 click-didyoumean==0.3.1 \
    click-repl==0.4.1 click-plugins==1.1.1.2 prompt_toolkit==3.0.53 wcwidth==0.9.4 tzlocal==5.4.5 \
    python-dateutil==2.9.0.post0 six==1.17.0 tzdata==2025.2 async-timeout==5.0.1 typing_extensions==4.15.0 packaging==25.0
  (cd "$CARRY/debs" && apt-get download redis-server redis-tools libjemalloc2 liblzf1 bubblewrap 2>/dev/null)
  du -sh "$CARRY"; ls "$CARRY"/*
}

run() {
  mkdir -p "$OUT" "$RUN"
  exec > >(tee "$OUT/check.log") 2>&1
  echo "== machine"; date -u; "$PY" -V; ls /dev/accel* /dev/vfio 2>/dev/null | paste -sd' '
  env | grep -E '^TPU_' | sort | paste -sd' '
  echo "== carried packages"
  if ls "$CARRY"/wheels/*.whl >/dev/null 2>&1; then
    PIP_CONFIG_FILE=/dev/null "$PY" -m pip install --isolated -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site "$CARRY"/wheels/*.whl && export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}/tmp/site"
  fi
  local root=/tmp/debroot
  for deb in "$CARRY"/debs/*.deb; do [ -e "$deb" ] && dpkg -x "$deb" "$root"; done
  export PATH="$root/usr/bin:$PATH" LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  "$PY" -c "import jax, celery, redis; print('jax', jax.__version__, 'celery', celery.__version__, 'redis-py', redis.__version__)"
  echo "== redis on $SOCK (no TCP)"
  redis-server --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --save "" --appendonly no --daemonize yes \
    --logfile "$OUT/redis.log" --dir "$RUN" || { echo "redis did not start"; return 1; }
  export REDIS_URL="unix://$SOCK?db=0"
  for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
  # The host runtime's libraries come from PYTHONPATH, which only the unsandboxed launcher passes.
  local sandbox=${SANDBOX:-fork}
  if [ "$sandbox" = none ]; then
    echo "!! the worker runs WITHOUT A SANDBOX (SANDBOX=none)"
  elif ! bwrap --unshare-user --ro-bind / / true 2>/dev/null; then
    sandbox=none
    echo "!! bwrap cannot start here (no user namespaces for an ordinary user): the worker runs WITHOUT A SANDBOX"
  fi
  echo "== worker (sandbox: $sandbox, runtime: host)"
  EXECUTOR_KIND=$KIND EXECUTOR_RUNTIME=host EXECUTOR_SANDBOX=$sandbox \
    EXECUTOR_ALLOW_UNSANDBOXED=$([ $sandbox = none ] && echo 1 || echo 0) EXECUTOR_CPU_DEVICES=0 \
    RUN_MEMORY_MB_TPU=32768 RUN_WALL_S_TPU=180 ACCELERATOR_SESSION_IDLE_S=${SESSION_IDLE_S:-20} \
    ANALYSER_PROCESSES=0 LOG_FORMAT=text \
    timeout 560 "$PY" -m celery -A executor.worker worker -Q "exec.$KIND@host" -P threads -c 2 -n "$KIND@%h" \
    --without-gossip --without-mingle -l info > "$OUT/worker.log" 2>&1 &
  local worker=$! waited=0 t0
  t0=$(date +%s.%N)
  until "$PY" - "$KIND" <<'PY' 2>/dev/null
import os, sys, redis
from executor import registry
sys.exit(0 if registry.online_workers(redis.Redis.from_url(os.environ["REDIS_URL"]), sys.argv[1] + "@host") else 1)
PY
  do
    sleep 1; waited=$((waited + 1))
    if ! kill -0 $worker 2>/dev/null || [ $waited -ge 150 ]; then
      echo "no $KIND worker online after ${waited} s; its log ends:"; tail -n 40 "$OUT/worker.log"
      kill $worker 2>/dev/null; return 1
    fi
  done
  echo "online after $(echo "$(date +%s.%N) - $t0" | bc) s"; grep -m1 " is $KIND" "$OUT/worker.log"
  "$PY" - "$KIND" "$OUT/devices.json" <<'PY'
import json, os, sys, redis
from executor import registry
described = registry.describe_kind(redis.Redis.from_url(os.environ["REDIS_URL"]), sys.argv[1])
json.dump(described, open(sys.argv[2], "w"), indent=1)
print(json.dumps({k: described.get(k) for k in ("platform", "device_kind", "device_count", "memory_bytes",
                                                 "jax_version", "slots", "sandboxed")}))
PY
  echo "== runs"
  PYTHONUNBUFFERED=1 timeout 420 "$PY" -m bench.accelerator_check --device "$KIND@host" --out "$OUT" ${CHECK_ARGS:-}
  echo "== worker log: faults, chips, leases"
  grep -iE "could not start|fault|chip|lease|error" "$OUT/worker.log" | tail -n 30
  kill "$worker" 2>/dev/null; wait "$worker" 2>/dev/null
  redis-cli -s "$SOCK" shutdown nosave >/dev/null 2>&1
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bash bench/tpu_check.sh prepare|run" >&2; exit 2 ;;
esac
