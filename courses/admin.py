"""Staff see courses and their work. Grades and submissions are read-only here: they come from
graded runs, and a hand-edited score would not say where it came from."""

from django.contrib import admin

from .models import Assignment, Course, CourseRun, Grading, Membership, Submission


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    raw_id_fields = ("user",)


@admin.register(Course)
class CourseAdmin(admin.ModelAdmin):
    list_display = ("title", "join_code", "created_by", "created_at", "archived_at")
    list_filter = (("archived_at", admin.EmptyFieldListFilter),)
    search_fields = ("title", "join_code", "created_by__username")
    readonly_fields = ("join_code", "created_at")
    raw_id_fields = ("created_by",)
    inlines = [MembershipInline]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("title", "course", "device", "due_at", "max_score", "checks_version")
    search_fields = ("title", "course__title")
    readonly_fields = ("max_score", "checks_version", "regrades", "validation_skipped", "created_at", "updated_at")
    raw_id_fields = ("course",)


class GradingInline(admin.TabularInline):
    model = Grading
    extra = 0
    fields = ("run", "status", "reported", "score", "max_score", "needs_regrade", "checks_version", "regrade",
              "finished_at")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Submission)
class SubmissionAdmin(admin.ModelAdmin):
    list_display = ("id", "assignment", "student", "status", "score", "max_score", "needs_regrade", "late",
                    "created_at")
    list_filter = ("status", "needs_regrade", "late")
    search_fields = ("student__username", "assignment__title")
    readonly_fields = ("assignment", "student", "code", "created_at", "late", "run", "status", "score", "max_score",
                       "checks", "message", "error", "log", "graded_at", "grading", "regrading", "needs_regrade")
    inlines = [GradingInline]

    def has_add_permission(self, request):
        return False


@admin.register(CourseRun)
class CourseRunAdmin(admin.ModelAdmin):
    list_display = ("run", "assignment", "student", "created_at")
    search_fields = ("student__username", "assignment__title")
    readonly_fields = ("run", "assignment", "student", "created_at")

    def has_add_permission(self, request):
        return False
