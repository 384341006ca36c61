from django import forms
from django.conf import settings

from memories.models import Persona, Scope, Source, User


class QueueFilterForm(forms.Form):
    user = forms.ModelChoiceField(
        queryset=User.objects.order_by("username"), required=False, empty_label="any user"
    )
    persona = forms.ModelChoiceField(
        queryset=Persona.objects.order_by("name"), required=False, empty_label="any persona"
    )
    scope = forms.ChoiceField(choices=[("", "any scope"), *Scope.choices], required=False)
    source = forms.ChoiceField(choices=[("", "any source"), *Source.choices], required=False)
    category = forms.CharField(required=False, max_length=100)


class BulkActionForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    ids = forms.TypedMultipleChoiceField(coerce=str, required=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Any UUID is accepted here; the services skip ids that are not pending.
        self.fields["ids"].valid_value = lambda value: True

    def clean_ids(self):
        import uuid

        try:
            return [uuid.UUID(value) for value in self.cleaned_data["ids"]]
        except ValueError:
            raise forms.ValidationError("Invalid memory id.") from None


class MemoryEditForm(forms.Form):
    key = forms.CharField(max_length=settings.MEMORY_KEY_MAX_LENGTH)
    value = forms.CharField(
        max_length=settings.MEMORY_VALUE_MAX_LENGTH, widget=forms.Textarea(attrs={"rows": 4})
    )
    category = forms.CharField(max_length=settings.MEMORY_CATEGORY_MAX_LENGTH, required=False)
    # Out-of-range values are clamped into 0..1 by the service, as everywhere.
    importance = forms.FloatField()
