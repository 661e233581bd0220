"""What accounts do when Django's auth says something happened: a successful sign-in forgets the
account's failures (each attempt is counted as one before its password is checked:
``accounts.backends``), and a changed password revokes every API token of
the account (a password change or reset is what one does after a leak: tokens made with the old
password must not outlive it)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.db.models.signals import post_save, pre_save
from django.dispatch import receiver

from .actions import do_forget_failed_sign_ins, do_revoke_all_tokens


@receiver(user_logged_in, dispatch_uid="accounts.signed_in")
def on_signed_in(sender, user, request=None, **kwargs) -> None:
    do_forget_failed_sign_ins(user.get_username())


def _password_is_changing(sender, instance, raw=False, **kwargs) -> None:
    # set_password() keeps the new raw password until the save; a hash upgraded at sign-in does
    # not (Django's setter clears it), and neither does a new account.
    instance._revoke_tokens_after_save = (not raw and instance.pk is not None
                                          and getattr(instance, "_password", None) is not None)


def _password_changed(sender, instance, created=False, raw=False, **kwargs) -> None:
    if getattr(instance, "_revoke_tokens_after_save", False):
        instance._revoke_tokens_after_save = False
        do_revoke_all_tokens(instance)


def connect() -> None:
    """The user model's signals (known only once the apps are loaded)."""
    user_model = get_user_model()
    pre_save.connect(_password_is_changing, sender=user_model, dispatch_uid="accounts.password_changing")
    post_save.connect(_password_changed, sender=user_model, dispatch_uid="accounts.password_changed")
