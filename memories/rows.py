"""Model instances from rows a hand-written statement read, for the hottest paths (every
request's key lookup, recall's access counts): building a queryset's SQL costs more than the
round trip to the database (~0.5 ms against ~0.1), and these statements never change shape.

`columns(Model, "alias")` names every concrete column in field order; `reader(Model)` turns
that slice of a row into an instance, converted as the ORM converts what it reads."""

import functools
from typing import Generic, TypeVar, cast

from django.db import connection
from django.db.models import Model

M = TypeVar("M", bound=Model)


def columns(model: type[Model], alias: str = "") -> str:
    """`alias."col", ...` (no alias: `"col", ...`) for every concrete field of the model, in
    field order. (A concrete field has a column, which the stubs cannot tell from the
    field's type.)"""
    quote = connection.ops.quote_name
    prefix = f"{alias}." if alias else ""
    return ", ".join(
        f"{prefix}{quote(cast(str, field.column))}" for field in model._meta.concrete_fields
    )


class RowReader(Generic[M]):
    """Reads instances of one model from `len(fields)` values of a row (see columns)."""

    def __init__(self, model: type[M]):
        self.model = model
        self.fields = model._meta.concrete_fields
        self.names = [field.attname for field in self.fields]
        self.converters = []
        for i, field in enumerate(self.fields):
            column = field.get_col(model._meta.db_table)
            functions = connection.ops.get_db_converters(column) + field.get_db_converters(
                connection
            )
            if functions:
                self.converters.append((i, column, functions))

    def __len__(self) -> int:
        return len(self.fields)

    def read(self, values) -> M:
        values = list(values)
        for i, column, functions in self.converters:
            for convert in functions:
                values[i] = convert(values[i], column, connection)
        return self.model.from_db(connection.alias, self.names, values)


def reader(model: type[M]) -> RowReader[M]:
    """The model's reader for the database of this process (built once)."""
    return _reader(model, connection.vendor)


@functools.cache
def _reader(model: type[Model], vendor: str) -> RowReader:
    return RowReader(model)
