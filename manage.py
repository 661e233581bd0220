#!/usr/bin/env python
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "web.settings")
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    # Settings that refuse (production without SECRET_KEY, a bad value) stop every command here
    # with their message: Django would run some commands (shell, help) without settings instead.
    try:
        settings.INSTALLED_APPS  # noqa: B018 - reading it loads web/settings.py
    except ImproperlyConfigured as exc:
        sys.exit(f"manage.py: {exc}")
    execute_from_command_line(sys.argv)
