"""The query parameters a list endpoint takes, and the 400 for any other: a typo such as
`?stauts=archived` would otherwise answer the unfiltered list as if it were the filtered one
(search and the other endpoints that validate their parameters with a serializer refuse
unknown ones already). DataPagination asks here, so every paginated list checks the same way."""

from rest_framework import exceptions

# The paginator's own, and DRF's format override (URL_FORMAT_OVERRIDE).
PAGINATION_PARAMS = ("page", "page_size", "format")


def list_params_known(view) -> list[str]:
    """The view's filters (its filterset, None on actions that filter nothing), the extra ones
    it names in `list_query_params`, and the pagination parameters."""
    known = list(PAGINATION_PARAMS)
    filterset_class = getattr(view, "filterset_class", None)
    if filterset_class is not None:
        known += list(filterset_class.base_filters)
    known += list(getattr(view, "list_query_params", ()))
    return known


def refuse_unknown_list_params(request, view) -> None:
    """Raises ValidationError naming each query parameter the list does not take."""
    known = list_params_known(view)
    unknown = sorted(set(request.query_params) - set(known))
    if unknown:
        message = f"Unknown query parameter; this list takes {', '.join(sorted(known))}."
        raise exceptions.ValidationError({name: [message] for name in unknown})
