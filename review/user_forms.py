"""The users explorer's forms: the list's search, one user's memory filters, and the erase
confirmation."""

import uuid

from django import forms

from memories.models import Project, Scope, Status, Topic, User
from review.user_selectors import CURRENT, DELETED

# Options a page offers in the project and topic menus (the newest); any project or topic of
# the user is still accepted in the address.
CARRIERS_OFFERED = 100


class UserSearchForm(forms.Form):
    # CharField refuses a NUL, which PostgreSQL would refuse in the query.
    q = forms.CharField(required=False, max_length=255, strip=True)


def _carrier_label(row) -> str:
    if isinstance(row, Project):
        return row.name
    return row.title or f"conversation of {row.created_at:%Y-%m-%d %H:%M}"


class UserMemoryFilterForm(forms.Form):
    """What the user page shows: a scope, project, topic and status (the current memories by
    default), and ?memory= for one memory's history in the timeline."""

    scope = forms.ChoiceField(
        # A persona's own memories are about no user.
        choices=[("", "any scope"), *(c for c in Scope.choices if c[0] != Scope.PERSONA)],
        required=False,
    )
    project = forms.ModelChoiceField(
        queryset=Project.objects.none(), required=False, empty_label="any project"
    )
    topic = forms.ModelChoiceField(
        queryset=Topic.objects.none(), required=False, empty_label="any conversation"
    )
    status = forms.ChoiceField(
        choices=[
            (CURRENT, "current"),
            (Status.PENDING_REVIEW, "pending review"),
            (Status.ARCHIVED, "archived"),
            (DELETED, "deleted"),
        ],
        required=False,
    )
    memory = forms.UUIDField(required=False, widget=forms.HiddenInput)
    group = forms.ChoiceField(
        choices=[
            ("category", "by category"),
            ("entity", "by person or thing"),
            ("pinned", "pinned first"),
        ],
        required=False,
    )

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        # Only this user's projects and conversations are accepted; the menus offer the
        # newest CARRIERS_OFFERED of each (a chat user may have thousands of conversations).
        projects = Project.objects.filter(owner=user).order_by("-created_at", "id")
        topics = Topic.objects.filter(user=user).order_by("-updated_at", "id")
        for name, queryset, empty in (
            ("project", projects, "any project"),
            ("topic", topics, "any conversation"),
        ):
            field = self.fields[name]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = queryset
            rows = list(queryset[:CARRIERS_OFFERED])
            chosen = self._chosen(name, queryset)
            if chosen is not None and chosen not in rows:
                rows.append(chosen)
            offered = [(str(row.pk), _carrier_label(row)) for row in rows]
            field.widget.choices = [("", empty), *offered]

    def _chosen(self, name: str, queryset):
        """The row the address names for `name`, if it is one of `queryset`'s."""
        if not self.is_bound or not self.data.get(name):
            return None
        try:
            return queryset.filter(pk=uuid.UUID(str(self.data[name]))).first()
        except ValueError:
            return None


class EraseForm(forms.Form):
    confirm = forms.CharField(max_length=255, strip=False, required=False)


def erase_confirmation(user: User) -> str:
    """What a reviewer types to erase `user`: their external id, or a local login's
    username."""
    return user.external_id if user.external_id is not None else user.username
