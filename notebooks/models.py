import uuid

from django.conf import settings
from django.db import models

from executor import runtimes
from playground.models import Run


class Notebook(models.Model):
    """A signed-in person's notebook, saved as it is edited: cells of code and Markdown, each code
    cell naming the run that last ran it (its outputs). ``version`` goes up by one with each save,
    so that a save from a page that has not seen the last one is refused, not lost."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notebooks")
    title = models.CharField(max_length=200, blank=True)
    # [{"id": str, "type": "code" | "markdown", "source": str, "run"?: run id}] (actions.check_cells)
    cells = models.JSONField(default=list, blank=True)
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    device = models.CharField(max_length=40)
    # The shared notebook it was forked from, if any.
    forked_from = models.ForeignKey("SharedNotebook", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="forks")
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "-updated_at"])]
        ordering = ["-updated_at"]

    def __str__(self):
        return f"/notebooks/{self.id}" + (f" {self.title}" if self.title else "")

    def get_absolute_url(self) -> str:
        return f"/notebooks/{self.id}"


class SharedNotebook(models.Model):
    """A notebook shared as a link (``/n/<slug>``), immutable once saved as a snippet is: its slug
    is its content's (title, cells, runtime, device), and it keeps the runs its code cells name,
    which nothing deletes from under it (``SharedNotebookRun``)."""

    slug = models.CharField(max_length=32, unique=True)
    content_hash = models.CharField(max_length=64, unique=True)
    title = models.CharField(max_length=200, blank=True)
    # [{"id": str, "type", "source", "run"?: run id}], as a notebook's.
    cells = models.JSONField(default=list)
    # The runtime it is pinned to: running its cells after a fork runs there.
    runtime = models.CharField(max_length=40, default=runtimes.FIRST)
    device = models.CharField(max_length=40)
    runs = models.ManyToManyField(Run, through="SharedNotebookRun", related_name="shared_notebooks")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="shared_notebooks")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"/n/{self.slug}" + (f" {self.title}" if self.title else "")

    def get_absolute_url(self) -> str:
        return f"/n/{self.slug}"


class SharedNotebookRun(models.Model):
    """A run a shared notebook shows as a cell's output: kept for good, as a snippet's saved run
    (deleting the run is refused while the link shows it)."""

    notebook = models.ForeignKey(SharedNotebook, on_delete=models.CASCADE, related_name="kept_runs")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="kept_by_notebooks")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["notebook", "run"], name="shared_notebook_run_unique")]

    def __str__(self):
        return f"{self.run_id} in /n/{self.notebook.slug}"

    def get_absolute_url(self) -> str:
        """What a refused deletion of the run names (``playground.actions.runs.do_delete_run``)."""
        return self.notebook.get_absolute_url()
