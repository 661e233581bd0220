import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    """A personal API token: scripts send it as ``Authorization: Bearer jpg_...`` and act as its
    owner. Only the SHA-256 of the secret is stored (a leaked database holds no usable token);
    the secret is shown once, when it is made. Public id: a UUID."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    # The first characters of the secret, so that its owner can tell which token a script holds.
    prefix = models.CharField(max_length=16)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # None: until revoked. After it the token is refused; its open websockets are closed (a
    # dashboard's at once, a run's or a session's at their next start, cell or state).
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"{self.prefix}… {self.name or '(unnamed)'} of {self.user}"

    @property
    def group(self) -> str:
        """The channel-layer group of the dashboards' websockets this token opened: revoking it
        closes them at once (the others ask the token again before they act)."""
        return f"token-{self.pk.hex}"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and (now or timezone.now()) >= self.expires_at


class Draft(models.Model):
    """Code a signed-in person is working on, kept on the server so that it follows them to
    another browser: their own code (key ``own``) and each example or snippet they edited
    (``example:<slug>``, ``snippet:<slug>``), one draft per key. The browser keeps the same drafts
    in localStorage and sends each change here (accounts/drafts.py)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="drafts")
    key = models.CharField(max_length=80)
    title = models.CharField(max_length=200, blank=True)
    code = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="one_draft_per_key")]

    def __str__(self):
        return f"{self.key} of {self.user}"


class Preferences(models.Model):
    """What a signed-in person chose for every browser they sign in from: the language of the
    pages (blank: none chosen; the browser's Accept-Language decides). The language control sets
    it (web/languages.py), and a browser without the language cookie is given it."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True,
                                related_name="preferences")
    language = models.CharField(max_length=16, blank=True, choices=settings.LANGUAGES)

    class Meta:
        verbose_name_plural = "preferences"

    def __str__(self):
        return f"preferences of {self.user}"
