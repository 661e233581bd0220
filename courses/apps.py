from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from playground.access import guard_runs

        from . import receivers  # noqa: F401 - the dashboard hears about runs through signals
        from .access import guard_validation_run

        guard_runs(guard_validation_run)  # a validation run carries the hidden reference solution
