from django.conf import settings
from django.db import models

from executor import runtimes
from playground.models import Run


class Snippet(models.Model):
    """Shared code, immutable once saved: its link (``/s/<slug>``) never changes meaning. It keeps
    the run it was shared from (or its first run) so the link shows what the code printed."""

    slug = models.CharField(max_length=32, unique=True)
    content_hash = models.CharField(max_length=64, unique=True)
    code = models.TextField()
    # Its standard input ("" for none): its runs read it, byte for byte.
    stdin = models.TextField(blank=True, default="")
    title = models.CharField(max_length=200, blank=True)
    description = models.TextField(blank=True)
    device = models.CharField(max_length=40)
    # The runtime it is pinned to (runtimes/runtimes.toml): pressing Run on its page runs there,
    # however the site's default moves on.
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    options = models.JSONField(default=dict, blank=True)
    # What it was saved with (the run's, else the executors' of its device kind then).
    jax_version = models.CharField(max_length=40, blank=True)
    jaxlib_version = models.CharField(max_length=40, blank=True)
    # A saved run is never deleted from under a link.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.PROTECT, related_name="snippets")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="forks")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="snippets")
    # Who shared it (web.clients.client_key: the account, else the address): a snippet
    # shared unrun keeps the first run of its code that they start, and no one else's.
    sharer_key = models.CharField(max_length=80, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Deleted by its owner: off their list and off search engines, the link still works.
    hidden_at = models.DateTimeField(null=True, blank=True)
    # Removed by staff for abuse: the link says so and shows nothing.
    removed_at = models.DateTimeField(null=True, blank=True)
    removed_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "-created_at"])]
        ordering = ["-created_at"]

    def __str__(self):
        return f"/s/{self.slug}" + (f" {self.title}" if self.title else "")

    def get_absolute_url(self) -> str:
        return f"/s/{self.slug}"


class Comparison(models.Model):
    """The same code on two runtimes, or two devices, side by side (``/compare/<slug>``): two
    runs, A and B, each kept for good under the link as a snippet keeps its saved run. A side may
    be a run that already happened (a pinned snippet's saved run, compared with the newest)."""

    slug = models.CharField(max_length=32, unique=True)
    code = models.TextField()
    title = models.CharField(max_length=200, blank=True)
    a = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="compared_as_a")
    b = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="compared_as_b")
    # The snippet whose page asked for it ("Run on the newest"), which its page names.
    snippet = models.ForeignKey(Snippet, null=True, blank=True, on_delete=models.SET_NULL, related_name="comparisons")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="comparisons")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"/compare/{self.slug}"

    def get_absolute_url(self) -> str:
        return f"/compare/{self.slug}"

    @property
    def sides(self) -> tuple[Run, Run]:
        return self.a, self.b
