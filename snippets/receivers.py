"""What snippets hear about runs (``playground.signals``), connected in ``SnippetsConfig.ready``."""

from __future__ import annotations

from django.dispatch import receiver

from playground.models import Run
from playground.signals import run_cancelling, run_started

from .access import check_may_cancel
from .actions import do_attach_first_run


@receiver(run_started, sender=Run, dispatch_uid="snippets.first_run")
def attach_first_run(sender, run, payload, who, **kwargs):
    """A run started from a snippet's page (``"snippet": <slug>``) may become its saved output."""
    if payload.get("snippet"):
        do_attach_first_run(payload["snippet"], run, who=who)


@receiver(run_cancelling, sender=Run, dispatch_uid="snippets.may_cancel")
def may_cancel(sender, run, who, **kwargs):
    """A snippet's saved run is cancelled only by whoever started it, or its owner."""
    check_may_cancel(run, who)
