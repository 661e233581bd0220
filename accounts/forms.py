from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import AuthenticationForm, UserCreationForm
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from web.errors import ActionError


def sentence(message: str) -> str:
    """A refusal (``ActionError.message``: lower case and without a full stop, as the API words it)
    as a sentence of a page: capitalised, ending with the full stop of the page's language."""
    return _("%(message)s.") % {"message": message[:1].upper() + message[1:]}


class SignUpForm(UserCreationForm):
    """Django's sign-up form (fields ``username``, ``password1``, ``password2``, as password
    managers expect) with an optional email: without one a forgotten password cannot be reset."""

    email = forms.EmailField(required=False, label=gettext_lazy("Email"),
                             help_text=gettext_lazy("Optional. Only used to reset a forgotten password."),
                             widget=forms.EmailInput(attrs={"autocomplete": "email"}))

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class EmailForm(forms.ModelForm):
    class Meta:
        model = get_user_model()
        fields = ("email",)
        help_texts = {"email": gettext_lazy("Where a password reset link is sent. Leave empty to have none.")}
        widgets = {"email": forms.EmailInput(attrs={"autocomplete": "email"})}


class SignInForm(AuthenticationForm):
    """Django's sign-in form, which says so when the account or the client is over its limit of
    failed sign-ins (``throttled`` then holds the refusal, for the page's 429). The throttle is
    the backend's (``accounts.backends``), which takes the attempt's place before the password
    is checked: a refusal there is said here instead of "wrong password"."""

    throttled: ActionError | None = None

    def clean(self):
        try:
            return super().clean()
        except forms.ValidationError:
            refused = getattr(self.request, "sign_in_refused", None) if self.request is not None else None
            if refused is None:
                raise
            self.throttled = refused
            raise forms.ValidationError(sentence(refused.message), code="throttled") from None
