"""/accounts/: Django's own URLs and form field names (password managers and scripts know them),
through our templates, plus sign-up and the account page."""

from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("", views.account, name="account"),
    path("email/", views.account_email, name="account-email"),
    path("tokens/", views.account_token_create, name="account-token-create"),
    path("tokens/<str:token_id>/revoke/", views.account_token_revoke, name="account-token-revoke"),
    path("signup/", views.signup, name="signup"),
    # Django's contrib.auth.urls, each given a template of ours: the admin's own registration/
    # templates would win over any we named the same (its app comes first in INSTALLED_APPS).
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password_change/", auth_views.PasswordChangeView.as_view(template_name="accounts/password_change_form.html"),
         name="password_change"),
    path("password_change/done/",
         auth_views.PasswordChangeDoneView.as_view(template_name="accounts/password_change_done.html"),
         name="password_change_done"),
    path("password_reset/", views.PasswordResetView.as_view(), name="password_reset"),
    path("password_reset/done/",
         auth_views.PasswordResetDoneView.as_view(template_name="accounts/password_reset_done.html"),
         name="password_reset_done"),
    path("reset/<uidb64>/<token>/",
         auth_views.PasswordResetConfirmView.as_view(template_name="accounts/password_reset_confirm.html"),
         name="password_reset_confirm"),
    path("reset/done/",
         auth_views.PasswordResetCompleteView.as_view(template_name="accounts/password_reset_complete.html"),
         name="password_reset_complete"),
]
