# Shared set-up steps of scripts/dev, scripts/test and .ci/run. Idempotent: a step whose inputs
# have not changed since it last ran is skipped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
mkdir -p var

say() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

# Debian/Ubuntu packages, installed when missing and we are root (elsewhere: a hint).
apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "missing system packages: ${missing[*]} (install them with your package manager)"
  fi
}

# A Python of 3.12 or newer: JAX 0.11+ and Django 6 refuse older ones.
find_python() {
  local want candidates=()
  want="$(cat .python-version 2>/dev/null || true)"
  [ -n "$want" ] && candidates+=("$HOME/.pyenv/versions/$want/bin/python")
  candidates+=(python3.13 python3.12 python3)
  for py in "${candidates[@]}"; do
    if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      command -v "$py"; return 0
    fi
  done
  die "Python 3.12 or newer is needed (e.g. 'pyenv install 3.12' or 'apt-get install python3.12')"
}

# .venv with the pinned requirements of $1 (a file under requirements/).
setup_venv() {
  local req="requirements/$1.txt" stamp
  if [ ! -x .venv/bin/python ]; then
    say "creating .venv"
    "$(find_python)" -m venv .venv
  fi
  stamp="$(cat requirements/*.txt | sha256sum | cut -c1-16)-$1"
  if [ "$(cat .venv/.installed 2>/dev/null)" != "$stamp" ]; then
    say "installing Python packages ($req)"
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -r "$req"
    echo "$stamp" > .venv/.installed
  fi
}

# The runtimes other than the executor's own (runtimes/runtimes.toml), each its own environment
# under var/runtimes built from its lock file; a runtime already up to date is skipped.
build_runtimes() {
  .venv/bin/python -m executor.runtimes build "$@" || die "the runtimes could not be built (python -m executor.runtimes build)"
}

# The front end: npm packages and the bundle Django serves from frontend/dist.
build_frontend() {
  command -v npm >/dev/null || apt_install nodejs npm
  local stamp
  stamp="$(cat frontend/package-lock.json | sha256sum | cut -c1-16)"
  if [ "$(cat frontend/node_modules/.installed 2>/dev/null)" != "$stamp" ]; then
    say "installing npm packages"
    (cd frontend && npm ci --no-audit --no-fund --loglevel=error)
    echo "$stamp" > frontend/node_modules/.installed
  fi
  say "building the front end"
  (cd frontend && npm run --silent build)
  build_messages
  .venv/bin/python manage.py collectstatic --noinput --clear -v0
}

# The server's catalogues: each <app>/locale/*/LC_MESSAGES/django.po and locale/ compiled to .mo.
build_messages() {
  command -v msgfmt >/dev/null || apt_install gettext
  DEBUG=1 .venv/bin/python manage.py compilemessages -v0 --ignore=.venv --ignore=var --ignore=frontend --ignore=node_modules
}

redis_answers() {
  .venv/bin/python - "$1" <<'PY' 2>/dev/null
import sys, redis
redis.Redis.from_url(sys.argv[1], socket_connect_timeout=1).ping()
PY
}

# Redis: REDIS_URL when set; else the one on 6379; else start one (kept under var/).
ensure_redis() {
  if [ -n "${REDIS_URL:-}" ]; then
    redis_answers "$REDIS_URL" || die "REDIS_URL=$REDIS_URL does not answer"
    return 0
  fi
  export REDIS_URL=redis://127.0.0.1:6379/0
  redis_answers "$REDIS_URL" && return 0
  command -v redis-server >/dev/null || apt_install redis-server
  command -v redis-server >/dev/null || die "no Redis: install redis-server or set REDIS_URL"
  say "starting a local Redis on 127.0.0.1:6379"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$ROOT/var" --logfile "$ROOT/var/redis.log"
  for _ in $(seq 50); do redis_answers "$REDIS_URL" && return 0; sleep 0.1; done
  die "the local Redis did not start; see var/redis.log"
}

# The sandbox backend this machine can use; "none" only with a loud warning.
choose_sandbox() {
  if [ -z "${EXECUTOR_SANDBOX:-}" ]; then
    command -v bwrap >/dev/null || apt_install bubblewrap
    if command -v bwrap >/dev/null; then
      export EXECUTOR_SANDBOX=fork
    else
      say "WARNING: bubblewrap is not installed: snippets will run WITHOUT A SANDBOX"
      export EXECUTOR_SANDBOX=none EXECUTOR_ALLOW_UNSANDBOXED=1
    fi
  fi
}
