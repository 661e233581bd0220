"""Account URLs outside /accounts/: the token API under /api/me/ and the /me/ pages."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("api/me/tokens", api.api_me_tokens, name="api-me-tokens"),
    path("api/me/tokens/<str:token_id>", api.api_me_token, name="api-me-token"),
    path("api/me/drafts", api.api_me_drafts, name="api-me-drafts"),
    path("api/me/drafts/<str:key>", api.api_me_draft, name="api-me-draft"),
    path("me/snippets/", views.my_snippets, name="my-snippets"),
    path("me/snippets/<str:slug>/delete/", views.my_snippet_delete, name="my-snippet-delete"),
    path("me/runs/", views.my_runs, name="my-runs"),
    path("me/runs/<str:run_id>/delete/", views.my_run_delete, name="my-run-delete"),
    path("me/runs/<str:run_id>/cancel/", views.my_run_cancel, name="my-run-cancel"),
]
