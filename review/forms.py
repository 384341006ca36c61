import uuid
from datetime import datetime, timedelta

from django import forms
from django.conf import settings
from django.utils import timezone

from memories.models import EntityKind, Persona, ProposalKind, Scope, Source, User
from memories.retention.expiry import EXPIRY_PASSED
from memories.selectors import administered_by, personas_of

# What an <input type="datetime-local"> holds and sends (minutes: browsers leave seconds out).
EXPIRES_AT_FORMAT = "%Y-%m-%dT%H:%M"

# The queue's age filter: (value, label, newer than, older than).
AGES = [
    ("hour", "last hour", timedelta(hours=1), None),
    ("day", "last day", timedelta(days=1), None),
    ("week", "last week", timedelta(weeks=1), None),
    ("older-day", "older than a day", None, timedelta(days=1)),
    ("older-week", "older than a week", None, timedelta(weeks=1)),
    ("older-month", "older than 30 days", None, timedelta(days=30)),
]


class QueueFilterForm(forms.Form):
    user = forms.ModelChoiceField(
        queryset=User.objects.order_by("username"), required=False, empty_label="any user"
    )
    persona = forms.ModelChoiceField(
        queryset=Persona.objects.order_by("name"), required=False, empty_label="any persona"
    )
    scope = forms.ChoiceField(choices=[("", "any scope"), *Scope.choices], required=False)
    source = forms.ChoiceField(choices=[("", "any source"), *Source.choices], required=False)
    age = forms.ChoiceField(
        choices=[("", "any age"), *((value, label) for value, label, *_ in AGES)], required=False
    )
    category = forms.CharField(required=False, max_length=100)
    # One conversation or work session (the "more from this conversation" links).
    source_topic = forms.UUIDField(required=False, widget=forms.HiddenInput)
    source_work_session = forms.UUIDField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, actor: User, **kwargs):
        super().__init__(*args, **kwargs)
        # Only the users and personas the reviewer administers (their tenant's) are offered
        # or accepted.
        persona_field = self.fields["persona"]
        assert isinstance(persona_field, forms.ModelChoiceField)
        persona_field.queryset = personas_of(actor).order_by("name")
        user_field = self.fields["user"]
        assert isinstance(user_field, forms.ModelChoiceField)
        user_field.queryset = User.objects.filter(administered_by(actor)).order_by("username")


class BulkActionForm(forms.Form):
    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    ids = forms.TypedMultipleChoiceField(coerce=str, required=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Any UUID is accepted here; the services skip ids that are not pending.
        self.fields["ids"].valid_value = lambda value: True

    def clean_ids(self):
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
    pinned = forms.BooleanField(required=False, label="Pinned (in every context hint)")
    expires_at = forms.DateTimeField(
        required=False,
        label="Expires at (UTC)",
        help_text="Empty: it does not expire.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format=EXPIRES_AT_FORMAT),
    )

    def __init__(self, *args, current_expires_at: datetime | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.current_expires_at = current_expires_at

    def clean_expires_at(self) -> datetime | None:
        value = self.cleaned_data["expires_at"]
        current = self.current_expires_at
        # The input holds minutes: the time the memory has, passed or not, comes back as it
        # was shown and is kept to the microsecond.
        if value is not None and current is not None:
            if value == current.replace(second=0, microsecond=0):
                return current
        if value is not None and value <= timezone.now():
            raise forms.ValidationError(EXPIRY_PASSED)
        return value


class ProposalFilterForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[("", "merges and archivals"), *ProposalKind.choices], required=False
    )


class ProposalDecisionForm(forms.Form):
    """A reviewer's decision on a proposal; for a merge, the merged text as they edited it."""

    action = forms.ChoiceField(choices=[("approve", "approve"), ("reject", "reject")])
    key = forms.CharField(max_length=settings.MEMORY_KEY_MAX_LENGTH, required=False)
    value = forms.CharField(max_length=settings.MEMORY_VALUE_MAX_LENGTH, required=False)


class EntityEditForm(forms.Form):
    """A reviewer's rename of an entity: aliases one per line."""

    name = forms.CharField(max_length=200)
    relation = forms.CharField(max_length=100, required=False)
    kind = forms.ChoiceField(choices=EntityKind.choices)
    aliases = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean_aliases(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["aliases"].splitlines()]
        return [line[:200] for line in lines if line][:50]


class EntityMergeForm(forms.Form):
    """Merge the entity `other` into the one of the page's form."""

    other = forms.UUIDField()


def _lines(text: str, name: str) -> list[dict]:
    """ "name: description" lines as the API's [{name, description}] (blank lines skipped)."""
    items = []
    for line in text.splitlines():
        if line.strip():
            head, _, description = line.partition(":")
            items.append({name: head.strip(), "description": description.strip()})
    return items


class ExtractionSettingsForm(forms.Form):
    """The extraction settings of a tenant or project as a page edits them; checked by the
    API's serializer (extraction.settings_api) once turned into its shape (as_api)."""

    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        help_text="What to remember and what never to keep.",
    )
    categories = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        help_text="One a line: name: description.",
    )
    keys = forms.CharField(
        label="Keys",
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        help_text="One a line: key: description. Empty: the service's vocabulary.",
    )
    language = forms.CharField(
        required=False, help_text="Empty: each memory in the language the user wrote it in."
    )
    exclude = forms.MultipleChoiceField(
        choices=[],
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Never keep",
    )

    def __init__(self, *args, **kwargs):
        from extraction.steering import EXCLUSIONS

        super().__init__(*args, **kwargs)
        self.fields["exclude"].choices = sorted(EXCLUSIONS.items())

    def as_api(self) -> dict:
        data = self.cleaned_data
        return {
            "instructions": data["instructions"],
            "categories": _lines(data["categories"], "name"),
            "keys": _lines(data["keys"], "key"),
            "language": data["language"],
            "exclude": data["exclude"],
        }

    @staticmethod
    def initial_of(row, *, tenant_level: bool) -> dict:
        """The form's values for a stored row; without one, a tenant's default exclusions
        ticked, so saving the form keeps them."""
        from extraction.steering import DEFAULT_EXCLUDE

        if row is None:
            return {"exclude": sorted(DEFAULT_EXCLUDE)} if tenant_level else {}
        return {
            "instructions": row.instructions,
            "categories": "\n".join(
                f"{c['name']}: {c.get('description', '')}" for c in row.categories
            ),
            "keys": "\n".join(f"{k['key']}: {k.get('description', '')}" for k in row.keys),
            "language": row.language,
            "exclude": row.exclude,
        }
