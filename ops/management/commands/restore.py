"""manage.py restore FILE: the database replaced by a backup of ``manage.py backup`` (ops/backup.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from ops import backup

from .backup import describe, redis_note


class Command(BaseCommand):
    help = ("Replace the database's contents with a backup made by manage.py backup. Stop the web processes "
            "and the recorder first; run manage.py migrate after (a backup of an older version).")

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path)
        parser.add_argument("--database", default="default")
        parser.add_argument("--noinput", "--no-input", action="store_false", dest="interactive",
                            help="do not ask for confirmation")

    def handle(self, *args, file: Path, database: str, interactive: bool, **options):
        connection = connections[database]
        settings_dict = connection.settings_dict
        if not file.is_file():
            raise CommandError(f"{file}: no such file")
        if interactive:
            answer = input(f"Everything in the database {settings_dict['NAME']} will be replaced by {file}. "
                           "Type 'yes' to go on: ")
            if answer != "yes":
                raise CommandError("restore cancelled")
        try:
            backup.restore(settings_dict, file, connection)
        except (backup.BackupError, OSError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"restored {file} into the {backup.ENGINE_NAMES[backup.engine(settings_dict)]} database "
                          f"{settings_dict['NAME']}: {describe(database)}")
        self.stdout.write("Next: manage.py migrate (the backup may be of an older version), then start the site.")
        self.stdout.write(redis_note())
