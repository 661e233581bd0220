from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import receivers  # sign-in failures, password changes (accounts/receivers.py)

        receivers.connect()
