class ActionError(Exception):
    """A request the playground refuses, with the HTTP status that says why. ``message`` is what a
    person reads, in the language of whoever asked: a lazy text is turned into one here, while
    that language is active."""

    def __init__(self, message: str, status: int = 400, headers: dict | None = None, data: dict | None = None):
        message = str(message)
        super().__init__(message)
        self.message, self.status, self.headers = message, status, headers or {}
        self.data = data or {}  # more fields of the JSON answer (which limit was hit, say)


def server_error(request, template_name: str = "500.html"):
    """The 500 page, rendered with its request (Django's own renders it with none) so that it has
    the language control, whose form needs the CSRF token and the page's path; Django's own when
    even that fails."""
    from django.shortcuts import render
    from django.views import defaults

    try:
        return render(request, template_name, status=500)
    except Exception:  # noqa: BLE001 - whatever broke the page may break this one too
        return defaults.server_error(request, template_name)
