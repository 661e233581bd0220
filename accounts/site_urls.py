"""Account URLs outside /accounts/: the token API under /api/me/ and the /me/ pages."""

urlpatterns: list = []
