import django_filters

from memories.carriers import SCOPE_ALIASES, scope_named
from memories.models import Memory, Scope, Source, Status
from memories.recall.keyword import get_keyword_index


class MemoryFilter(django_filters.FilterSet):
    """Query parameters of GET /api/memories. `status` defaults to active."""

    status = django_filters.ChoiceFilter(choices=Status.choices, method="filter_status")
    scope = django_filters.ChoiceFilter(
        choices=[*Scope.choices, *((alias, alias) for alias in SCOPE_ALIASES)],
        method="filter_scope",
    )
    project_id = django_filters.UUIDFilter(field_name="project_id")
    persona_id = django_filters.UUIDFilter(field_name="persona_id")
    category = django_filters.CharFilter(field_name="category", max_length=100)
    source = django_filters.ChoiceFilter(choices=Source.choices)
    query = django_filters.CharFilter(method="filter_query", max_length=500)

    class Meta:
        model = Memory
        fields: list[str] = []

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.filter(status=Status.ACTIVE)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        return queryset.filter(status=value)

    def filter_scope(self, queryset, name, value):
        return queryset.filter(scope=scope_named(value))

    def filter_query(self, queryset, name, value):
        return get_keyword_index().filter_all_words(queryset, value)
