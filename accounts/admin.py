from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Staff see and revoke (delete) tokens; none can be made here, since a token's secret is shown
    only to the person who makes it, on their account page."""

    list_display = ("prefix", "name", "user", "created_at", "last_used_at")
    list_filter = (("last_used_at", admin.EmptyFieldListFilter),)
    search_fields = ("prefix", "name", "user__username")
    readonly_fields = ("id", "user", "prefix", "key_hash", "created_at", "last_used_at")
    fields = ("id", "user", "name", "prefix", "key_hash", "created_at", "last_used_at")

    def has_add_permission(self, request):
        return False
