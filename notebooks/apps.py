from django.apps import AppConfig


class NotebooksConfig(AppConfig):
    name = "notebooks"
    default_auto_field = "django.db.models.BigAutoField"
