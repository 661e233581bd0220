from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import metrics  # noqa: F401 - runs' ends counted for /metrics, through the signals
