import re

from rest_framework import exceptions
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from rest.list_params import refuse_unknown_list_params

# str.isdigit() also accepts digits such as "²" that int() refuses.
WHOLE_NUMBER = re.compile(r"[0-9]{1,9}")


class DataPagination(PageNumberPagination):
    """{"data": [...], "count", "next", "previous"}; page_size 50 by default, 200 at most."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200

    def get_page_size(self, request):
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not WHOLE_NUMBER.fullmatch(raw) or int(raw) < 1:
            raise exceptions.ValidationError({"page_size": ["Must be a whole number from 1."]})
        return min(int(raw), self.max_page_size)

    def paginate_queryset(self, queryset, request, view=None):
        refuse_unknown_list_params(request, view)
        raw = request.query_params.get(self.page_query_param, "1")
        if not WHOLE_NUMBER.fullmatch(raw) or int(raw) < 1:
            raise exceptions.ValidationError({"page": ["Must be a whole number from 1."]})
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        return Response(
            {
                "data": data,
                "count": self.page.paginator.count,
                "next": self.get_next_link(),
                "previous": self.get_previous_link(),
            }
        )

    def get_paginated_response_schema(self, schema):
        return {
            "type": "object",
            "required": ["data", "count", "next", "previous"],
            "properties": {
                "data": schema,
                "count": {"type": "integer"},
                "next": {"type": "string", "format": "uri", "nullable": True},
                "previous": {"type": "string", "format": "uri", "nullable": True},
            },
        }
