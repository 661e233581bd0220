"""manage.py backup FILE: the whole database in one file (ops/backup.py), while the site runs."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from ops import backup


class Command(BaseCommand):
    help = ("Back up the database to FILE: a SQLite database file, or pg_dump's custom format for PostgreSQL. "
            "Safe while the site runs. Redis needs no backup.")

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--database", default="default")

    def handle(self, *args, file: Path, database: str, **options):
        settings_dict = connections[database].settings_dict
        try:
            backup.backup(settings_dict, file)
        except (backup.BackupError, OSError) as exc:
            raise CommandError(str(exc)) from None
        name = backup.ENGINE_NAMES[backup.engine(settings_dict)]
        self.stdout.write(f"backed up the {name} database {settings_dict['NAME']} to {file} "
                          f"({file.stat().st_size} bytes): {describe(database)}")
        self.stdout.write(redis_note())


def describe(database: str) -> str:
    """What the database holds, in a few counts."""
    from django.contrib.auth import get_user_model

    from courses.models import Course
    from playground.models import Run, RunEvent
    from snippets.models import Snippet

    counts = {"accounts": get_user_model(), "runs": Run, "run events": RunEvent, "snippets": Snippet,
              "courses": Course}
    return ", ".join(f"{model.objects.using(database).count()} {name}" for name, model in counts.items())


def redis_note() -> str:
    return "Redis holds nothing a restore needs:\n" + "\n".join(
        f"  - {what}: {why}" for what, why in backup.REDIS_NOT_NEEDED)
