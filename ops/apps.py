from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Operations: backing up and restoring the database (manage.py backup, manage.py restore)."""

    name = "ops"
