"""/api/courses, /api/assignments, /api/submissions. Ids are matched as any segment: one that is
not a number names nothing, and answers the same JSON 404 as one that names no course."""

from django.urls import path

from . import api

urlpatterns = [
    path("api/courses", api.api_courses, name="api-courses"),
    path("api/courses/join", api.api_course_join, name="api-course-join"),
    path("api/courses/<str:course_id>", api.api_course, name="api-course"),
    path("api/courses/<str:course_id>/members", api.api_course_members, name="api-course-members"),
    path("api/courses/<str:course_id>/members/<str:user_id>", api.api_course_member, name="api-course-member"),
    path("api/courses/<str:course_id>/bans/<str:user_id>", api.api_course_ban, name="api-course-ban"),
    path("api/courses/<str:course_id>/archive", api.api_course_archive, name="api-course-archive"),
    path("api/courses/<str:course_id>/assignments", api.api_course_assignments, name="api-course-assignments"),
    path("api/courses/<str:course_id>/dashboard", api.api_course_dashboard, name="api-course-dashboard"),
    path("api/courses/<str:course_id>/grades.csv", api.api_course_grades, name="api-course-grades"),
    path("api/assignments/<str:assignment_id>", api.api_assignment, name="api-assignment"),
    path("api/assignments/<str:assignment_id>/runs", api.api_assignment_runs, name="api-assignment-runs"),
    path("api/assignments/<str:assignment_id>/submissions", api.api_assignment_submissions,
         name="api-assignment-submissions"),
    path("api/assignments/<str:assignment_id>/regrade", api.api_assignment_regrade, name="api-assignment-regrade"),
    path("api/submissions/<str:submission_id>", api.api_submission, name="api-submission"),
    path("api/me/invitations", api.api_me_invitations, name="api-me-invitations"),
    path("api/invitations/<str:invitation_id>/accept", api.api_invitation_accept, name="api-invitation-accept"),
    path("api/invitations/<str:invitation_id>/decline", api.api_invitation_decline, name="api-invitation-decline"),
]
