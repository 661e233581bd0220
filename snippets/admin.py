from django.contrib import admin
from django.utils import timezone

from .models import Snippet


@admin.register(Snippet)
class SnippetAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "owner", "device", "created_at", "hidden_at", "removed_at")
    list_filter = ("device", ("removed_at", admin.EmptyFieldListFilter), ("hidden_at", admin.EmptyFieldListFilter))
    search_fields = ("slug", "title", "description", "code", "owner__username")
    readonly_fields = ("slug", "content_hash", "code", "title", "description", "device", "options", "jax_version",
                       "jaxlib_version", "run", "parent", "owner", "created_at", "hidden_at")
    actions = ["remove_for_abuse", "restore"]

    @admin.action(description="Remove for abuse (the link shows that it was removed)")
    def remove_for_abuse(self, request, queryset):
        queryset.update(removed_at=timezone.now(), removed_reason="removed by the playground's staff")

    @admin.action(description="Restore removed snippets")
    def restore(self, request, queryset):
        queryset.update(removed_at=None, removed_reason="")

    def has_delete_permission(self, request, obj=None):
        return False  # links never rot: remove, do not delete
