class ActionError(Exception):
    """A request the playground refuses, with the HTTP status that says why."""

    def __init__(self, message: str, status: int = 400, headers: dict | None = None, data: dict | None = None):
        super().__init__(message)
        self.message, self.status, self.headers = message, status, headers or {}
        self.data = data or {}  # more fields of the JSON answer (which limit was hit, say)
