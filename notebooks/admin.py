from django.contrib import admin

from .models import Notebook, SharedNotebook


@admin.register(Notebook)
class NotebookAdmin(admin.ModelAdmin):
    list_display = ("id", "title", "owner", "runtime", "device", "version", "updated_at")
    search_fields = ("id", "title", "owner__username")
    readonly_fields = ("id", "owner", "cells", "forked_from", "version", "created_at", "updated_at")


@admin.register(SharedNotebook)
class SharedNotebookAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "owner", "runtime", "device", "created_at")
    search_fields = ("slug", "title", "owner__username")
    readonly_fields = ("slug", "content_hash", "title", "cells", "runtime", "device", "owner", "created_at")

    def has_delete_permission(self, request, obj=None):
        return False  # links never rot
