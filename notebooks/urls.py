from django.urls import path, re_path

from . import views

urlpatterns = [
    path("api/notebooks", views.api_notebooks, name="api-notebooks"),
    path("api/notebooks/share", views.api_share, name="api-notebooks-share"),
    path("api/notebooks/import", views.api_import, name="api-notebooks-import"),
    path("api/notebooks/shared/<str:slug>", views.api_shared, name="api-notebooks-shared"),
    path("api/notebooks/shared/<str:slug>/fork", views.api_shared_fork, name="api-notebooks-shared-fork"),
    path("api/notebooks/<str:notebook_id>", views.api_notebook, name="api-notebook"),
    path("api/notebooks/<str:notebook_id>/fork", views.api_notebook_fork, name="api-notebook-fork"),
    path("api/cells/names", views.api_cell_names, name="api-cells-names"),
    path("notebooks/", views.notebooks_page, name="notebooks"),
    path("notebooks/new", views.new_notebook_page, name="notebook-new"),
    # A signed-out person's notebook, kept in their browser only, under an address of its own.
    re_path(r"^notebooks/draft/(?P<draft_id>[0-9a-z]{12})$", views.new_notebook_page, name="notebook-draft"),
    re_path(r"^notebooks/(?P<notebook_id>[0-9a-f-]{36})\.ipynb$", views.notebook_ipynb, name="notebook-ipynb"),
    path("notebooks/<uuid:notebook_id>", views.notebook_page, name="notebook"),
    path("notebooks/<uuid:notebook_id>/delete", views.notebook_delete, name="notebook-delete"),
    re_path(r"^n/(?P<slug>[0-9a-z]+)\.ipynb$", views.shared_ipynb, name="shared-notebook-ipynb"),
    path("n/<str:slug>", views.shared_page, name="shared-notebook"),
]
