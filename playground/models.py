import functools
import uuid

from django.conf import settings
from django.db import connection, models
from django.db.models.fields import AutoFieldMixin

from executor import events as ev
from executor import runtimes


class Run(models.Model):
    """One execution of some code on one device kind. Public id: a UUID."""

    STATUS_CHOICES = [(s, s) for s in ev.STATUSES]

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    code = models.TextField()
    # What the snippet read as its standard input (UTF-8, exactly; "" for none).
    stdin = models.TextField(blank=True, default="")
    # What the run asked for: a kind ("gpu") or a specific device kind ("gpu:h200").
    device = models.CharField(max_length=40)
    # The runtime it runs on (runtimes/runtimes.toml): a stable id, never repointed. Runs from
    # before there were several ran on the first.
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    status = models.CharField(max_length=16, choices=STATUS_CHOICES, default=ev.STATUS_QUEUED, db_index=True)
    options = models.JSONField(default=dict, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    worker = models.CharField(max_length=200, blank=True)
    # Where it ran, from its "started" event: the worker's device string ("gpu:h200") and the
    # device kind jax named ("NVIDIA H200").
    ran_on = models.CharField(max_length=40, blank=True)
    device_kind = models.CharField(max_length=100, blank=True)
    message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wall_ms = models.FloatField(null=True, blank=True)
    cpu_ms = models.FloatField(null=True, blank=True)
    peak_memory_kb = models.BigIntegerField(null=True, blank=True)
    # A notebook session's cell (executor/sessions.py): it ran in the session's runner, with the
    # state its earlier cells left.
    session = models.ForeignKey("Session", null=True, blank=True, related_name="cells", on_delete=models.SET_NULL)

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self):
        return f"run {self.id} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in ev.TERMINAL_STATUSES


class Session(models.Model):
    """A notebook's session: one sandboxed runner on one node that keeps its cells' state. Who
    made it and what it runs on are here; its live state (idle, live, stopped, what it holds, its
    node) is in Redis (executor/sessionstate.py), which its node and the web side both write."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    # Whose it is (web.clients' person key: user:<id>, anon:<id>, ip:...): only they may use it.
    client = models.CharField(max_length=120, db_index=True)
    # Signed out, everyone at the maker's address together (web.clients' room), whose sessions are
    # capped together too (SESSION_MAX_PER_ROOM): identities minted per page load buy no more.
    room = models.CharField(max_length=120, blank=True, db_index=True)
    device = models.CharField(max_length=40)
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    idle_timeout_s = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    stopped_reason = models.TextField(blank=True)

    def __str__(self):
        return f"session {self.id}"


# What the listeners of a run's status read of it (``signals.run_status_changed``'s ``run``): the
# recorder reads them once for every listener (metrics, quotas, courses' receivers), which
# otherwise each asked for their own columns, three queries a status. ``grading`` and
# ``course_run`` are the reverse relations of the apps that keep runs of their own (courses).
RUN_FACTS = ("device", "runtime", "created_at", "finished_at", "wall_ms", "grading", "course_run")


def run_facts(run_id: str) -> dict | None:
    """The run's RUN_FACTS as stored (``grading`` and ``course_run``: the ids of what it is in a
    course, or None); None when it is not stored."""
    # Sliced rather than first(): a row named by its key needs no ORDER BY, whose expression
    # Django resolves and compiles anew for every batch the recorder stores.
    found = list(Run.objects.filter(id=run_id).values(*RUN_FACTS)[:1])
    return found[0] if found else None


class RunProfile(models.Model):
    """A profiled run's trace (Chrome Trace Event Format JSON, gzipped, as the executor checked
    it): stored by the recorder with the run's ``profile`` event, served by
    ``/api/runs/<id>/profile``, and kept as long as the run (a shared link's with it)."""

    run = models.OneToOneField(Run, primary_key=True, related_name="profile", on_delete=models.CASCADE)
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)


class RunEvent(models.Model):
    """An event of a run, exactly as browsers receive it (``data`` includes seq and type)."""

    run = models.ForeignKey(Run, related_name="events", on_delete=models.CASCADE)
    seq = models.PositiveIntegerField()
    type = models.CharField(max_length=16)
    data = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="run_event_seq_unique")]
        ordering = ["seq"]


@functools.cache
def _insert_of(model: type[models.Model]) -> tuple[str, list]:
    """The INSERT of one ``model`` row (its fields but a database-made key), built once."""
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin)]
    quote = connection.ops.quote_name
    return (f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "
            f"VALUES ({', '.join(['%s'] * len(fields))})"), fields


def insert_new(*rows: models.Model) -> None:
    """New rows, in order, each one INSERT built once per model (``_insert_of``): the ORM's
    ``create`` builds and compiles its statement for every row, half the cost of storing a run
    with its "queued". Fields are prepared as ``save`` prepares them (defaults, ``auto_now_add``);
    no signal is sent, and a database-made key is not read back."""
    with connection.cursor() as cursor:
        for row in rows:
            sql, fields = _insert_of(type(row))
            cursor.execute(sql, [f.get_db_prep_save(f.pre_save(row, True), connection) for f in fields])
            row._state.adding, row._state.db = False, connection.alias
