from django.apps import AppConfig


class CoursesConfig(AppConfig):
    name = "courses"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from playground.access import guard_runs

        from . import receivers  # noqa: F401 - the dashboard hears about runs through signals
        from .access import guard_graded_run

        # A graded run is its student's and the course's instructors' (a validation run, which carries the
        # hidden reference solution, the instructors' alone).
        guard_runs(guard_graded_run)
