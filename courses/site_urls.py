"""The course pages (the API is in ``courses.api_urls``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("courses/", views.courses_page, name="courses"),
    path("courses/checks", views.checks_guide, name="course-checks-guide"),
    path("courses/join/<str:code>", views.join_page, name="course-join"),
    path("courses/join/<str:code>/signup", views.join_signup, name="course-join-signup"),
    path("courses/join/<str:code>/signin", views.join_signin, name="course-join-signin"),
    path("courses/invitations/<str:invitation_id>/accept", views.invitation_accept, name="course-invitation-accept"),
    path("courses/invitations/<str:invitation_id>/decline", views.invitation_decline,
         name="course-invitation-decline"),
    path("courses/<str:course_id>/removed/<str:user_id>/readmit", views.readmit, name="course-readmit"),
    path("courses/<str:course_id>/", views.course_page, name="course"),
    path("courses/<str:course_id>/dashboard", views.dashboard_page, name="course-dashboard"),
    path("assignments/<str:assignment_id>/", views.assignment_page, name="assignment"),
]
