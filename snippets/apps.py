from django.apps import AppConfig


class SnippetsConfig(AppConfig):
    name = "snippets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import receivers  # noqa: F401 - a snippet's saved run, through playground's signals
