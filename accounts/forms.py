from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import UserCreationForm


class SignUpForm(UserCreationForm):
    """Django's sign-up form (fields ``username``, ``password1``, ``password2``, as password
    managers expect) with an optional email: without one a forgotten password cannot be reset."""

    email = forms.EmailField(required=False, help_text="Optional. Only used to reset a forgotten password.",
                             widget=forms.EmailInput(attrs={"autocomplete": "email"}))

    class Meta(UserCreationForm.Meta):
        fields = ("username", "email")


class EmailForm(forms.ModelForm):
    class Meta:
        model = get_user_model()
        fields = ("email",)
        help_texts = {"email": "Where a password reset link is sent. Leave empty to have none."}
        widgets = {"email": forms.EmailInput(attrs={"autocomplete": "email"})}
