"""Settings of the web side (Django + Channels) and its recorder: the only module of the web side
that reads the environment. Defaults run a checkout as is (SQLite, Redis on localhost); a bad
value raises ImproperlyConfigured with how to fix it."""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

from executor import celeryconf, logs
from executor.registry import KINDS
from executor.envvars import env_bool, env_choice, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
# Local state of a checkout (the SQLite database, the beat schedule): git ignores it.
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", "")
# Fail closed: without DEBUG=1 this is production, which must not sign sessions and tokens with a
# key everyone knows. Collecting static files (a build step, before any secret exists) needs none.
_NO_SECRET_COMMANDS = ("collectstatic",)
if not SECRET_KEY:
    if env_bool("REQUIRE_SECRET_KEY", not DEBUG) and not (
            os.path.basename(sys.argv[0]) in ("manage.py", "django-admin") and sys.argv[1:2]
            and sys.argv[1] in _NO_SECRET_COMMANDS):
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off (production): set SECRET_KEY to a long random string, "
            "e.g. python -c 'import secrets; print(secrets.token_urlsafe(50))', or DEBUG=1 on a development machine")
    SECRET_KEY = "insecure-development-key-set-SECRET_KEY-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "http://127.0.0.1,http://localhost")
# Reverse proxies of our own in front of daphne (each appends to X-Forwarded-For); 0 when
# clients connect directly, so that a client cannot choose its address by sending the header.
TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0, minimum=0)

# Served over TLS (by daphne, or by a proxy of ours that sets X-Forwarded-Proto): cookies only
# over https, HSTS, the proxy's word for the scheme. On by default in production (DEBUG off) for
# any host name but this machine's own: a site reached as 127.0.0.1 or localhost (the test
# suite, a trial run) is plain http, and a Secure cookie would never come back from it.
_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}
HTTPS = env_bool("HTTPS", not DEBUG and any(h not in _LOOPBACK_HOSTS for h in ALLOWED_HOSTS))
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = LANGUAGE_COOKIE_SECURE = HTTPS
if HTTPS:
    # A year, as `check --deploy` asks; the subdomains and the browsers' preload list are the
    # domain owner's to choose (they bind every other site under it).
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if TRUSTED_PROXIES:
        # Our proxy took TLS and says so; a client cannot, as X-Forwarded-For cannot either.
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Usually the proxy redirects http to https itself; SECURE_SSL_REDIRECT=1 has Django do it
# (never for the health checks: load balancers poll them over plain http).
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Deliberate choices `check --deploy` would otherwise warn of: no redirect unless asked (the
# proxy's job), HSTS without subdomains or preload unless asked.
SILENCED_SYSTEM_CHECKS = [
    *([] if SECURE_SSL_REDIRECT else ["security.W008"]),
    *(["security.W005"] if HTTPS and not SECURE_HSTS_INCLUDE_SUBDOMAINS else []),
    *(["security.W021"] if HTTPS and not SECURE_HSTS_PRELOAD else []),
]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "playground",
    "snippets",
    "accounts",
    "courses",
    "notebooks",
    "ops",  # manage.py backup, manage.py restore
]

# Around every websocket route, inside the session's sign-in (web/asgi.py): a script's API token
# makes the socket its owner's; one that is not valid closes it with 4401.
WEBSOCKET_MIDDLEWARE = ["accounts.auth.SocketTokenMiddleware"]

MIDDLEWARE = [
    "web.metrics.RequestMetricsMiddleware",  # requests by route and status, and their latency
    # All run synchronously under ASGI (web/middleware.py): the chain runs in one thread hop.
    "web.runlog.RunLogMiddleware",  # the run a request names, on its log lines
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The language of pages, mails and API errors: the person's choice (cookie), else the
    # browser's Accept-Language, else English; the control on every page and a signed-in person's account
    # set it (web/languages.py).
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "web.languages.AccountLanguage",  # a signed-in person's language, in a browser without the cookie
    "web.clients.BrowserMiddleware",  # a browser's own identity, signed out (web/clients.py)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
]

# A Content Security Policy on every page: scripts only from this site (no inline script at
# all: data for a page travels in <script type="application/json">), no plugins, no framing but
# by /embed/ pages, which open it to every site. Monaco injects its styles, hence inline styles;
# figures are data: URLs. What a snippet prints or is titled can never run as script.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:", "blob:"],
    "font-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF, "ws:", "wss:"],
    "worker-src": [CSP.SELF, "blob:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}

ROOT_URLCONF = "web.urls"
ASGI_APPLICATION = "web.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": [
            "django.template.context_processors.request",
            "django.template.context_processors.csrf",
            "django.template.context_processors.i18n",
            "django.contrib.auth.context_processors.auth",
            "django.contrib.messages.context_processors.messages",
        ]},
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}"), conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"].endswith("postgresql") and env_bool("DATABASE_POOL", True):
    # Under ASGI every request has a thread of its own, so without a pool each one opened a
    # connection to PostgreSQL and closed it: 6.5 ms of a small request's 10 here, twice for a
    # run (its POST, its websocket). The pool (psycopg_pool) keeps them open for every thread.
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env_int("DATABASE_POOL_MIN", 2, minimum=0),
        "max_size": env_int("DATABASE_POOL_MAX", 16, minimum=1),
        "timeout": 30,
    }
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Web, recorder and watchdog write concurrently: wait for the lock instead of failing.
    # WAL: readers never wait for the recorder's writes; synchronous=NORMAL: a commit does not
    # wait for fsync (WAL stays consistent; a power cut may lose the last commits, fine for a
    # development default). Together they take a commit from ~10 ms to well under 1 ms here.
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
    # A file, not memory, so the test suite's worker processes share the test database; one of
    # its own for each run of the suite (tests/testenv.py names it), so that two runs side by
    # side on one checkout never write to each other's.
    DATABASES["default"]["TEST"] = {"NAME": env_str("TEST_DATABASE_NAME", str(VAR_DIR / "test.sqlite3"))}
    # A connection kept by each thread between requests and recorder tasks rather than opened for
    # each (opening one, with its PRAGMAs, was 8% of the recorder's samples in a burst of
    # print(1): bench.stages --flames). PostgreSQL's connections are kept by its pool instead.
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("SQLITE_CONN_MAX_AGE", 300, minimum=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

# Course dashboards fan out through it (run pages read their run's stream instead). Its receive
# blocks 5 s on Redis: the socket timeout must be longer than that, or a quiet socket is closed.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}]},
    }
}

# Celery (web side: sends executor.run, runs the recorder and the watchdog).
CELERY_BROKER_URL = REDIS_URL
WATCHDOG_EVERY_S = env_int("WATCHDOG_EVERY_S", 5, minimum=1)
# The queue the recorder listens on (celery -A web worker -Q record), as the executors send to it.
RECORD_QUEUE = env_str("RECORD_QUEUE", celeryconf.RECORD_QUEUE)

# Runs.
# Stamp each stage of a run's path in Redis (executor/stages.py), for bench.stages; off in
# production.
RUN_STAGE_TIMES = env_bool("RUN_STAGE_TIMES", False)
RUN_DEVICE_KINDS = KINDS
RUN_DEFAULT_DEVICE = env_choice("RUN_DEFAULT_DEVICE", "cpu", RUN_DEVICE_KINDS)
RUN_MAX_CODE_BYTES = env_int("RUN_MAX_CODE_BYTES", 64 * 1024, minimum=1)
# A request body above this is refused with a JSON error: room for the largest code
# JSON-escaped (\u00XX is 6 characters for one byte), nothing like Django's 2.5 MB default.
DATA_UPLOAD_MAX_MEMORY_SIZE = max(1024**2, 8 * RUN_MAX_CODE_BYTES)
# web.server (daphne with a limit) refuses a larger body with a 413 while it reads it: at once when
# Content-Length says so, else as soon as the bytes read pass it; nothing of it is kept or written
# to disk. Django never sees such a request.
MAX_REQUEST_BYTES = env_int("MAX_REQUEST_BYTES", DATA_UPLOAD_MAX_MEMORY_SIZE, minimum=1024)
# Runs one person (an account, a browser, else an address: web/clients.py) may start a minute; 0
# turns the limit off.
RUN_RATE_LIMIT_PER_MINUTE = env_int("RUN_RATE_LIMIT_PER_MINUTE", 30)
# The formatter (POST /api/format) costs a few milliseconds of ruff a call.
FORMAT_RATE_LIMIT_PER_MINUTE = env_int("FORMAT_RATE_LIMIT_PER_MINUTE", 120)
# The editor's analysis (completion, signatures, hover; POST /api/analyse) and problems as you
# type (POST /api/lint): a request every few keystrokes while typing, so limits sized for that.
ANALYSE_RATE_LIMIT_PER_MINUTE = env_int("ANALYSE_RATE_LIMIT_PER_MINUTE", 600)
ANALYSE_TIMEOUT_S = env_int("ANALYSE_TIMEOUT_S", 3, minimum=1)
LINT_RATE_LIMIT_PER_MINUTE = env_int("LINT_RATE_LIMIT_PER_MINUTE", 240)
# Limits asked for each run; an executor enforces the stricter of these and its own.
RUN_LIMITS = {
    "wall_s": env_int("RUN_WALL_S", 30, minimum=1),
    "events": env_int("RUN_MAX_EVENTS", 10_000, minimum=100),
    "events_per_s": env_int("RUN_EVENTS_PER_S", 200, minimum=10),
}
# ...and for each device kind: RUN_WALL_S_GPU, RUN_MEMORY_MB_GPU, RUN_OUTPUT_KB_GPU (the same
# names an executor of that kind reads for its maximums) change what a run of that kind asks.
RUN_LIMITS_BY_KIND = {
    kind: {
        **RUN_LIMITS,
        "wall_s": env_int(f"RUN_WALL_S_{kind.upper()}", RUN_LIMITS["wall_s"], minimum=1),
        **({"memory_bytes": env_int(f"RUN_MEMORY_MB_{kind.upper()}", 0, minimum=256) * 1024**2}
           if env_int(f"RUN_MEMORY_MB_{kind.upper()}", 0) else {}),
        **({"output_bytes": env_int(f"RUN_OUTPUT_KB_{kind.upper()}", 0, minimum=1) * 1024}
           if env_int(f"RUN_OUTPUT_KB_{kind.upper()}", 0) else {}),
    }
    for kind in RUN_DEVICE_KINDS
}
# A worker is online while its last heartbeat (every EXECUTOR_HEARTBEAT_S, 5 s) is younger than
# this: a kind whose workers went away leaves /api/devices, and new runs for it get a 503.
EXECUTOR_ONLINE_WINDOW_S = env_int("EXECUTOR_ONLINE_WINDOW_S", 15, minimum=2)
# Fair shares (playground/quotas.py), per person (an account, else a browser's signed identity,
# else an address; IPv6 per /64) and device kind: runs queued or running at once, executor
# seconds an hour and a day, and how long a kind's queue may grow before new runs are refused
# with a 503. 0 turns one off. Each can be set for one kind with a suffix:
# RUN_MAX_ACTIVE_PER_CLIENT_GPU=1, RUN_BUDGET_S_PER_HOUR_TPU=300.
# Requests signed out and without an identity (scripts, curl) share their address's runs at
# once, twice a person's by default (RUN_MAX_ACTIVE_PER_ADDRESS).
# A room is everyone signed out behind one address (a workshop's Wi-Fi, a school's NAT): each
# browser there has a person's share, and together, with the address's own, they have ROOM_SIZE
# people's: ROOM_SIZE times a person's run starts a minute, executor seconds an hour and a day,
# and editor requests a minute; runs at once, one each (RUN_MAX_ACTIVE_PER_ROOM: the room's
# runs are what everyone else's wait behind, and one each lets a whole room press Run together).
# Whoever mints identities (fetching pages for cookies) gets a room's and no more.
ROOM_SIZE = env_int("ROOM_SIZE", 40, minimum=1)


def _per_kind(name: str, default: int, kind: str) -> int:
    """``<name>_<KIND>`` when set, else ``<name>``, else ``default``."""
    return env_int(f"{name}_{kind.upper()}", env_int(name, default, minimum=0), minimum=0)


def _quotas(kind: str) -> dict:
    active = _per_kind("RUN_MAX_ACTIVE_PER_CLIENT", 4, kind)
    address_active = _per_kind("RUN_MAX_ACTIVE_PER_ADDRESS", 2 * active, kind)
    return {
        "active": active,
        "address_active": address_active,
        # Never below the address's own share, which the room holds.
        "room_active": _per_kind("RUN_MAX_ACTIVE_PER_ROOM", max(ROOM_SIZE, address_active) if active else 0, kind),
        "per_hour_s": _per_kind("RUN_BUDGET_S_PER_HOUR", 1800, kind),
        "per_day_s": _per_kind("RUN_BUDGET_S_PER_DAY", 4 * 3600, kind),
        "queue_max": _per_kind("RUN_QUEUE_MAX", 500, kind),
    }


RUN_QUOTAS = {kind: _quotas(kind) for kind in RUN_DEVICE_KINDS}
# A run no executor took within this long is given up as lost (its queue went with a broker
# that restarted, say); it is never run late.
RUN_QUEUE_TIMEOUT_S = env_int("RUN_QUEUE_TIMEOUT_S", 600, minimum=30)
# GET /api/runs/<id> returns a run's events a page at a time.
RUN_EVENTS_PAGE = env_int("RUN_EVENTS_PAGE", 1000, minimum=10)

# Notebook sessions (executor/sessions.py): a session held idle this long is stopped by its node
# (which may hold it less: EXECUTOR_SESSION_IDLE_S), and its page says so; the sessions one person
# may hold at once (each holds a node's memory while idle; a cell holds a run's slot while it runs).
SESSION_IDLE_TIMEOUT_S = env_int("SESSION_IDLE_TIMEOUT_S", 1200, minimum=5)
SESSION_MAX_PER_CLIENT = env_int("SESSION_MAX_PER_CLIENT", 3, minimum=1)
# ...and everyone signed out at one address together (a room: ROOM_SIZE people, one session each
# on average), so that a client minting browser identities cannot fill the nodes' sessions.
SESSION_MAX_PER_ROOM = env_int("SESSION_MAX_PER_ROOM", ROOM_SIZE, minimum=1)
# New sessions one person may start an hour (a restore is a new session).
SESSION_RATE_LIMIT_PER_HOUR = env_int("SESSION_RATE_LIMIT_PER_HOUR", 60, minimum=1)

# Notebooks: shared notebooks one client may make an hour (as snippets); the cells of one notebook
# and their sources' bytes in all (a cell's source is at most RUN_MAX_CODE_BYTES); the notebooks one
# person may keep; the largest .ipynb file an import reads (its outputs are dropped; no body passes
# MAX_REQUEST_BYTES anyway).
NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR = env_int("NOTEBOOK_SHARE_RATE_LIMIT_PER_HOUR", 120, minimum=0)
NOTEBOOK_MAX_CELLS = env_int("NOTEBOOK_MAX_CELLS", 300, minimum=1)
NOTEBOOK_MAX_BYTES = env_int("NOTEBOOK_MAX_BYTES", 512 * 1024, minimum=1024)
NOTEBOOK_MAX_PER_PERSON = env_int("NOTEBOOK_MAX_PER_PERSON", 1000, minimum=1)
NOTEBOOK_IMPORT_MAX_BYTES = env_int("NOTEBOOK_IMPORT_MAX_BYTES", MAX_REQUEST_BYTES, minimum=1024)

# Sharing and accounts. Snippets one client (address) and one account may share an hour; sign-ups
# one address may make an hour. Mail (password resets) goes to the console unless EMAIL_BACKEND
# names another of Django's backends (with its EMAIL_* settings).
SNIPPET_RATE_LIMIT_PER_HOUR = env_int("SNIPPET_RATE_LIMIT_PER_HOUR", 120, minimum=0)
SIGNUP_RATE_LIMIT_PER_HOUR = env_int("SIGNUP_RATE_LIMIT_PER_HOUR", 10, minimum=0)
# Sign-ups through a course's join link count apart (courses.actions.members.sign_up_bucket): at most
# this many an hour through one course's link, and this many from one address through any: two
# rooms of 60 behind one school's address in the same hour; a bot that makes courses of its own
# to reuse their links gets no more than that from an address.
SIGNUP_RATE_LIMIT_PER_COURSE_HOUR = env_int("SIGNUP_RATE_LIMIT_PER_COURSE_HOUR", 120, minimum=0)
_EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
MAILERS = {"default": {
    "BACKEND": _EMAIL_BACKEND,
    "OPTIONS": {"host": env_str("EMAIL_HOST", "localhost"), "port": env_int("EMAIL_PORT", 25, minimum=1)}
    if _EMAIL_BACKEND.endswith("smtp.EmailBackend") else {},
}}
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "JAX Playground <noreply@localhost>")
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Sign-ins: Django's, throttled (accounts/backends.py): failed sign-ins one account, and one
# client, may have in 15 minutes before further tries are refused (without hashing anything).
AUTHENTICATION_BACKENDS = ["accounts.backends.ThrottledModelBackend"]
# The JSON API's authenticator (web/api.py), by name so that web/'s library imports no app: a
# bearer token or the session (with its CSRF check).
API_AUTHENTICATE = "accounts.auth.authenticate_api_request"
SIGNIN_FAILURES_PER_ACCOUNT = env_int("SIGNIN_FAILURES_PER_ACCOUNT", 10, minimum=0)
SIGNIN_FAILURES_PER_CLIENT = env_int("SIGNIN_FAILURES_PER_CLIENT", 30, minimum=0)
# Draft saves (PUT/DELETE /api/me/drafts) one account may make a minute: the editor sends a
# change a few seconds after typing stops.
DRAFT_RATE_LIMIT_PER_MINUTE = env_int("DRAFT_RATE_LIMIT_PER_MINUTE", 120, minimum=0)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Courses. A graded run that ended without a grade (lost, cancelled) is graded 0, saying why, after
# this many seconds (its grade may still be on its way: the recorder takes tasks in any order).
COURSES_GRADE_GRACE_S = env_int("COURSES_GRADE_GRACE_S", 5, minimum=1)
# Dashboard snapshots (GET /api/courses/<id>/dashboard, each socket's first message) one client
# may take a minute, and regrades one instructor may start an hour.
DASHBOARD_RATE_LIMIT_PER_MINUTE = env_int("DASHBOARD_RATE_LIMIT_PER_MINUTE", 30, minimum=0)
REGRADE_RATE_LIMIT_PER_HOUR = env_int("REGRADE_RATE_LIMIT_PER_HOUR", 20, minimum=0)

# /readyz answers from a result at most READYZ_CACHE_S old (one database and Redis check a second
# per process, however often it is polled), at most READYZ_RATE_LIMIT_PER_MINUTE a client.
READYZ_CACHE_S = float(env_int("READYZ_CACHE_S", 1, minimum=0))
READYZ_RATE_LIMIT_PER_MINUTE = env_int("READYZ_RATE_LIMIT_PER_MINUTE", 120, minimum=0)

# GET /metrics (web/metrics.py), Prometheus's text format: answered to a client whose address (as
# TRUSTED_PROXIES says: behind a proxy of ours, the one it saw) is in METRICS_ALLOW, addresses and
# networks ("none" for no address at all), or that sends Authorization: Bearer METRICS_TOKEN
# (unset: no token is accepted); 403 otherwise.
def _networks(name: str, default: str) -> list:
    items = env_list(name, default)
    if items == ["none"]:
        return []
    try:
        return [ipaddress.ip_network(item, strict=False) for item in items]
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}: {exc}; give addresses or networks separated by commas, "
                                   "e.g. 127.0.0.0/8,::1,10.0.0.0/8, or none") from None


METRICS_ALLOW = _networks("METRICS_ALLOW", "127.0.0.0/8,::1")
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
if METRICS_TOKEN and len(METRICS_TOKEN) < 16:
    raise ImproperlyConfigured("METRICS_TOKEN is shorter than 16 characters: use a long random one, e.g. "
                               "python -c 'import secrets; print(secrets.token_urlsafe(32))'")
# Where the web processes and the recorder of this host keep their counts (prometheus_client's
# multiprocess mode, which reads the same variable itself), so that any of them answers /metrics
# for all. Unset: each process counts on its own and answers for itself alone.
METRICS_DIR = env_str("PROMETHEUS_MULTIPROC_DIR", "")
if METRICS_DIR:
    try:
        Path(METRICS_DIR).mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ImproperlyConfigured(f"PROMETHEUS_MULTIPROC_DIR={METRICS_DIR!r} cannot be made: {exc}") from None

# Websockets. A person (an account, a browser, else an address) may hold this many open at once;
# an event larger than WS_MESSAGE_MAX_BYTES is sent in parts (daphne refuses messages of 1 MiB and
# more).
WS_MAX_PER_CLIENT = env_int("WS_MAX_PER_CLIENT", 32, minimum=1)
# Run sockets a page opens ahead of its next run (/ws/runs/new/) are counted apart: holding them
# costs nothing, so they must not take the slots of sockets that carry runs. Over this, a page
# starts its runs with a POST instead; one not used for WS_NEW_IDLE_S is closed.
WS_MAX_NEW_PER_CLIENT = env_int("WS_MAX_NEW_PER_CLIENT", 64, minimum=1)
# ...and everyone signed out at one address (a room, above) this many of each between them: a few
# tabs of ROOM_SIZE people, each holding a socket for its next run and one for a run; never fewer
# than one client's, as the room holds the address's own share.
WS_MAX_PER_ROOM = env_int("WS_MAX_PER_ROOM", max(4 * ROOM_SIZE, WS_MAX_PER_CLIENT), minimum=1)
WS_MAX_NEW_PER_ROOM = env_int("WS_MAX_NEW_PER_ROOM", max(4 * ROOM_SIZE, WS_MAX_NEW_PER_CLIENT), minimum=1)
WS_NEW_IDLE_S = env_int("WS_NEW_IDLE_S", 900, minimum=10)
WS_MESSAGE_MAX_BYTES = env_int("WS_MESSAGE_MAX_BYTES", 256 * 1024, minimum=1024)
# What one websocket may leave waiting in the server (web/server.py): messages it sent that its
# consumer has not taken yet, then it is closed (4429); bytes sent to it that it has not read,
# then it is dropped. Without them a client that sends faster than it is answered, or never
# reads what a session's cells print, grew the web process's memory without end.
WS_MAX_PENDING_MESSAGES = env_int("WS_MAX_PENDING_MESSAGES", 64, minimum=2)
WS_MAX_PENDING_BYTES = env_int("WS_MAX_PENDING_BYTES", 4 * 1024**2, minimum=64 * 1024)
WS_MAX_UNSENT_BYTES = env_int("WS_MAX_UNSENT_BYTES", 16 * 1024**2, minimum=1024**2)

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "dist"]
# Static files are served from STATIC_ROOT as collected (`manage.py collectstatic`, which the
# scripts run after building the front end), in every mode: content-hashed names cached forever,
# and precompressed with Brotli and gzip (the Monaco bundle is 3.6 MB, about 0.75 MB as Brotli),
# so the development server loads as fast as production. STATIC_FROM_SOURCE=1 serves
# frontend/dist as it is instead, for `node build.mjs --watch` (uncompressed, never cached).
STATIC_FROM_SOURCE = env_bool("STATIC_FROM_SOURCE", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if STATIC_FROM_SOURCE
                    else "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = STATIC_FROM_SOURCE
WHITENOISE_AUTOREFRESH = STATIC_FROM_SOURCE

USE_TZ = True
TIME_ZONE = "UTC"

# Two languages: English and Simplified Chinese. Each app keeps its catalogue in <app>/locale/,
# the project package's in web/locale/. The .mo files are built from the .po files by
# `manage.py compilemessages` (scripts/lib.sh), never committed. The front end has its own
# catalogues (frontend/src/i18n/), bundled with it.
USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "web" / "locale"]
LANGUAGE_COOKIE_NAME = "playground_language"
LANGUAGE_COOKIE_AGE = 365 * 24 * 3600
LANGUAGE_COOKIE_SAMESITE = "Lax"

# Log lines on stderr: JSON objects, one a line, with the run a line concerns (executor/logs.py,
# shared with the executor), or text for people (LOG_FORMAT=text, what scripts/dev sets).
LOG_FORMAT = env_choice("LOG_FORMAT", "json", ("json", "text"))
LOGGING = logs.dict_config(LOG_FORMAT, env_str("LOG_LEVEL", "INFO"))
