"""``GET /metrics``: what the web side is doing, and the fleet as the broker sees it, in
Prometheus's text format (prometheus_client's own encoder).

    web process ──┐ counters, histograms, live gauges: mmap files of one directory per host,
    web process ──┼─▶ PROMETHEUS_MULTIPROC_DIR (counter_<pid>.db, histogram_<pid>.db, ...)
    recorder    ──┘        │
                           ▼ any web process answers /metrics for all of them (MultiProcessCollector)
    Redis ─────────────▶ + the fleet, read at scrape time (web/fleet.py): the same from every process

Several daphne processes serve one site, and the recorder (runs ended, end-to-end latency,
recorder lag) is a process of its own: a count kept in one process's memory would answer for
whichever process the scrape reached. prometheus_client's multiprocess mode keeps each process's
counts in a file of its own in one directory, and a scrape sums them. What lives only as long as
its process (open websockets) is a "livesum" gauge: the files of a process that is gone are
dropped. A dead process's counters and histograms stay counted (a total that fell at every
restart would read as a counter reset, and rate() would jump), merged into one archive file per
type so that the directory does not grow with every restart (``tidy``, under a lock that scrapes
take too). The directory belongs to one host and one pid namespace: a pid names a process there.
Without PROMETHEUS_MULTIPROC_DIR each process counts on its own and answers for itself.

A request is counted by its URL pattern (``/api/runs/<uuid:run_id>``), never its path, so a
label takes only as many values as the URL configuration has routes; a request that matched no
route is "unmatched", a static file "static". The middleware is synchronous (web/middleware.py
says why) and costs a few memory writes: nothing here talks to Redis or the database per request.

Access: a client whose address (web/clients.py: behind TRUSTED_PROXIES, the one the outermost
proxy saw) is in METRICS_ALLOW, or that sends ``Authorization: Bearer <METRICS_TOKEN>``; 403
for anyone else.
"""

from __future__ import annotations

import atexit
import fcntl
import glob
import hmac
import ipaddress
import os
import time
from contextlib import contextmanager

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY, Counter, Gauge, Histogram
from prometheus_client.exposition import choose_encoder
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from executor.processes import pid_alive
from web.clients import client_address
from web.fleet import FleetCollector

# The directory ------------------------------------------------------------------------------------

_LOCK = ".lock"
_ARCHIVE = "archive"
# What a process leaves that outlives it: its counts, merged into <type>_archive.db.
_KEPT_TYPES = ("counter", "histogram", "summary")


@contextmanager
def directory_lock(path: str):
    """Held while the directory is read (a scrape) or rewritten (``tidy``), so that no scrape sees
    a dead process's counts both in its own file and in the archive, or in neither."""
    fd = os.open(os.path.join(path, _LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _files_of_dead_processes(path: str) -> dict[int, list[str]]:
    dead: dict[int, list[str]] = {}
    for name in glob.glob(os.path.join(path, "*.db")):
        tail = os.path.basename(name)[:-3].rsplit("_", 1)[-1]
        if tail.isdigit() and int(tail) != os.getpid() and not pid_alive(int(tail)):
            dead.setdefault(int(tail), []).append(name)
    return dead


def tidy(path: str) -> None:
    """Under ``directory_lock``: forget the live gauges of processes that are gone (one killed
    without a chance to say so, too) and fold their counters and histograms into the archive."""
    dead = _files_of_dead_processes(path)
    for pid in dead:
        mark_process_dead(pid, path)
    for kind in _KEPT_TYPES:
        leftovers = [f for files in dead.values() for f in files if os.path.basename(f).startswith(kind + "_")]
        if leftovers:
            _merge_into_archive(path, kind, leftovers)


def _merge_into_archive(path: str, kind: str, files: list[str]) -> None:
    archive = os.path.join(path, f"{kind}_{_ARCHIVE}.db")
    merged = MultiProcessCollector.merge([archive, *files] if os.path.exists(archive) else files, accumulate=False)
    fresh = archive + ".new"  # not *.db: never read half-written
    if os.path.exists(fresh):
        os.remove(fresh)
    out = MmapedDict(fresh)
    try:
        for metric in merged:
            for sample in metric.samples:
                out.write_value(mmap_key(metric.name, sample.name, list(sample.labels), list(sample.labels.values()),
                                         metric.documentation), sample.value, 0.0)
    finally:
        out.close()
    os.replace(fresh, archive)
    for name in files:
        os.remove(name)


def _start_multiprocess(path: str) -> None:
    """Before this process counts anything: a live gauge left under its pid by an earlier process
    (pids are reused) is not its own; then the directory is tidied. At a clean exit its live
    gauges go (its counts stay, for the next tidy to archive)."""
    pid = os.getpid()
    with directory_lock(path):
        mark_process_dead(pid, path)
        tidy(path)

    def leave() -> None:
        if os.getpid() == pid:  # not in a forked child that exits through here
            mark_process_dead(pid, path)

    atexit.register(leave)


MULTIPROCESS = bool(settings.METRICS_DIR)
if MULTIPROCESS:
    _start_multiprocess(settings.METRICS_DIR)


# This process's metrics ---------------------------------------------------------------------------

HTTP_REQUESTS = Counter("playground_http_requests", "HTTP requests answered, by URL pattern, method and status",
                        ["route", "method", "status"])
HTTP_DURATION = Histogram("playground_http_request_duration_seconds",
                          "Time from the first middleware to the response, by URL pattern and method",
                          ["route", "method"])
WEBSOCKETS_OPEN = Gauge("playground_websockets_open", "Websockets open now, by consumer (run, course)",
                        ["consumer"], multiprocess_mode="livesum")
WEBSOCKETS_OPENED = Counter("playground_websockets_opened", "Websockets opened, by consumer (run, course)",
                            ["consumer"])

# Methods a label may name; any other is "other" (a client chooses the method it sends).
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_of(request) -> str:
    """The URL pattern a request matched, as a label: bounded by the URL configuration."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return "/" + match.route
    if request.path.startswith(settings.STATIC_URL):
        return "static"  # WhiteNoise answered before any URL was resolved
    return "unmatched"


class RequestMetricsMiddleware:
    """HTTP requests by route, method and status, and how long each took. Synchronous only, as
    every middleware here (web/middleware.py); first in MIDDLEWARE, so it times the whole chain."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_of(request)
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUESTS.labels(route, method, str(response.status_code)).inc()
        HTTP_DURATION.labels(route, method).observe(time.perf_counter() - started)
        return response


class CountedWebsocket:
    """Mixed into a websocket consumer (before Channels' class): its sockets are counted in
    playground_websockets_open from connection to close, however the socket ends, under the
    consumer's name less "Consumer" (RunConsumer: "run")."""

    async def __call__(self, scope, receive, send):
        consumer = type(self).__name__.removesuffix("Consumer").lower()
        WEBSOCKETS_OPENED.labels(consumer).inc()
        gauge = WEBSOCKETS_OPEN.labels(consumer)
        gauge.inc()
        try:
            return await super().__call__(scope, receive, send)
        finally:
            gauge.dec()


# GET /metrics -------------------------------------------------------------------------------------

def allowed(request) -> bool:
    """The bearer of METRICS_TOKEN (compared in constant time), or a client whose address is in
    METRICS_ALLOW; a forwarded address counts only from proxies we trust (web/clients.py)."""
    token = settings.METRICS_TOKEN
    if token:
        scheme, _, secret = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(secret.strip().encode(), token.encode()):
            return True
    address = client_address(request.META.get("REMOTE_ADDR"), request.META.get("HTTP_X_FORWARDED_FOR"))
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in settings.METRICS_ALLOW)


class _Scrape:
    """What one scrape reports: this host's processes (or this process alone), then the fleet's
    families, read beforehand (Redis is not waited for while the directory is locked)."""

    def __init__(self, processes, fleet: list):
        self.processes, self.fleet = processes, fleet

    def collect(self):
        yield from self.processes.collect()
        yield from self.fleet


@require_GET
def metrics(request):
    if not allowed(request):
        return HttpResponse("metrics are for the addresses in METRICS_ALLOW, or with METRICS_TOKEN\n",
                            status=403, content_type="text/plain; charset=utf-8")
    encode, content_type = choose_encoder(request.META.get("HTTP_ACCEPT"))
    fleet = list(FleetCollector().collect())
    if MULTIPROCESS:
        path = settings.METRICS_DIR
        with directory_lock(path):
            tidy(path)
            body = encode(_Scrape(MultiProcessCollector(None, path=path), fleet))
    else:
        body = encode(_Scrape(REGISTRY, fleet))
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response
