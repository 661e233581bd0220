from django.urls import path, re_path

from . import views

urlpatterns = [
    path("api/snippets", views.api_snippets, name="api-snippets"),
    path("api/snippets/<str:slug>", views.api_snippet, name="api-snippet"),
    path("api/me/snippets", views.api_me_snippets, name="api-me-snippets"),
    path("api/me/snippets/<str:slug>", views.api_me_snippet, name="api-me-snippet"),
    re_path(r"^s/(?P<slug>[0-9a-z]+)\.(?P<ext>py|ipynb|json)$", views.snippet_download, name="snippet-download"),
    path("s/<str:slug>/figure.png", views.snippet_figure, name="snippet-figure"),
    path("s/<str:slug>", views.snippet_page, name="snippet"),
    path("embed/<str:slug>", views.embed, name="embed"),
    path("api/comparisons", views.api_comparisons, name="api-comparisons"),
    path("api/comparisons/<str:slug>", views.api_comparison, name="api-comparison"),
    path("compare/<str:slug>", views.comparison_page, name="comparison"),
]
