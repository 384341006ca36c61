import django_filters
from django.utils import timezone

from memories.carriers import SCOPE_ALIASES, scope_named
from memories.filters.compile import filter_condition
from memories.filters.language import filter_parse
from memories.models import Memory, Scope, Source, Status, unexpired
from memories.recall.keyword import get_keyword_index


class MemoryFilter(django_filters.FilterSet):
    """Query parameters of GET /api/memories. Without `status`, the current memories: active
    and not expired (an expired one the retention sweep has not archived yet is left out);
    with it, the memories of that status."""

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
    filter = django_filters.CharFilter(
        method="filter_filter",
        help_text=(
            "Only memories this filter matches: the JSON text of a filter object (docs/api.md, "
            "Filters), e.g. {\"metadata.app\": \"ios\", \"importance\": {\"gte\": 0.7}}."
        ),
    )

    class Meta:
        model = Memory
        fields: list[str] = []

    def filter_queryset(self, queryset):
        if not self.form.cleaned_data.get("status"):
            queryset = queryset.filter(unexpired(timezone.now()), status=Status.ACTIVE)
        return super().filter_queryset(queryset)

    def filter_status(self, queryset, name, value):
        return queryset.filter(status=value)

    def filter_scope(self, queryset, name, value):
        return queryset.filter(scope=scope_named(value))

    def filter_query(self, queryset, name, value):
        return get_keyword_index().filter_all_words(queryset, value)

    def filter_filter(self, queryset, name, value):
        # A problem answers 400 naming its path (filter.and[0].metadata.app.gte).
        node = filter_parse(value)
        return queryset if node is None else queryset.filter(filter_condition(node))
