from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"
