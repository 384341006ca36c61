"""A parsed filter (language.py) as SQL for the database in use: one boolean expression over
the memory table's columns, which the ORM takes as a condition (filter_condition) and the
raw statements of recall embed (filter_sql).

Both databases answer alike (tests/memories/test_filters_generated.py): every condition is
typed, so a metadata value of another type, or a missing one, never matches eq, in, gt, gte,
lt, lte or contains, and always matches ne and nin (they are `not` eq, `not` in); text
compares by code point (PostgreSQL: COLLATE "C", SQLite: BINARY); `contains` is
case-sensitive; every condition is true or false, never NULL (COALESCE where it could be),
so `not` is the plain negation. On PostgreSQL an equality on metadata is also
written as a containment (`metadata @> ...`), which the GIN index on metadata answers."""

import json
from typing import Any

from django.db import connection
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from memories.filters.language import (
    BOOLEAN,
    FIELDS,
    METADATA,
    NUMBER,
    TEXT,
    TIME,
    All,
    AnyOf,
    Condition,
    Node,
    Not,
)
from memories.models import Memory

COMPARISONS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def filter_condition(node: Node) -> RawSQL:
    """The filter as a condition for Memory querysets: `queryset.filter(filter_condition(f))`."""
    table = connection.ops.quote_name(Memory._meta.db_table)
    sql, params = filter_sql(node, prefix=f"{table}.")
    return RawSQL(sql, params, output_field=BooleanField())


def filter_sql(node: Node, *, prefix: str = "") -> tuple[str, list]:
    """(sql, params) of the filter, its columns written `prefix` + name ("m." in a raw
    statement that names the memory table m)."""
    postgres = connection.vendor == "postgresql"
    return _Compiler(prefix=prefix, postgres=postgres).node(node)


class _Compiler:
    def __init__(self, *, prefix: str, postgres: bool) -> None:
        self.prefix = prefix
        self.postgres = postgres

    def node(self, node: Node) -> tuple[str, list]:
        if isinstance(node, All | AnyOf):
            joiner = " AND " if isinstance(node, All) else " OR "
            parts = [self.node(part) for part in node.parts]
            sql = joiner.join(f"({part_sql})" for part_sql, _ in parts)
            return f"({sql})", [param for _, part_params in parts for param in part_params]
        if isinstance(node, Not):
            sql, params = self.node(node.part)
            return f"NOT ({sql})", params
        sql, params = self.condition(node)
        if self.never_null(node):
            # Left bare, so that SQLite can answer `id IN (...)` from the id's index.
            return sql, params
        # NULL-safe: a missing value is false, so NOT is the plain negation.
        return f"COALESCE(({sql}), FALSE)", params

    def never_null(self, c: Condition) -> bool:
        """Whether the condition's SQL is true or false, never NULL, so it can be left bare
        for the database to answer from an index: the memory's own columns (none is
        nullable), SQLite's top-level metadata conditions (`id IN (SELECT ...)`),
        PostgreSQL's metadata equalities (`metadata @> ...` and the type of a value that
        containment proves is there)."""
        if c.field != METADATA:
            return True
        if self.postgres:
            return c.op in ("eq", "in")
        return len(c.path) == 1

    def condition(self, c: Condition) -> tuple[str, list]:
        if c.op in ("ne", "nin"):
            positive = Condition(c.field, c.path, "eq" if c.op == "ne" else "in", c.value)
            sql, params = self.condition(positive)
            if self.never_null(positive):
                return f"NOT ({sql})", params
            return f"NOT COALESCE(({sql}), FALSE)", params
        if c.field == METADATA:
            return self.metadata(c)
        return self.column(c)

    # --- The memory's own columns --------------------------------------------------------

    def column(self, c: Condition) -> tuple[str, list]:
        kind = FIELDS[c.field]
        # The fields' columns have the fields' names (no db_column).
        column = self.prefix + connection.ops.quote_name(c.field)
        text_order = f'{column} COLLATE "C"' if self.postgres and kind == TEXT else column
        if c.op == "eq":
            return f"{column} = %s", [self.param(kind, c.value)]
        if c.op == "in":
            marks = ", ".join(["%s"] * len(c.value))
            return f"{column} IN ({marks})", [self.param(kind, value) for value in c.value]
        if c.op in COMPARISONS:
            return f"{text_order} {COMPARISONS[c.op]} %s", [self.param(kind, c.value)]
        if c.op == "contains":
            return self.contains(column), [c.value]
        raise AssertionError(c.op)  # language.py lets no other operator through

    def param(self, kind: str, value: Any) -> Any:
        if kind == TIME:
            # SQLite keeps times as text in Django's format: compared as that text.
            return connection.ops.adapt_datetimefield_value(value)
        if kind == BOOLEAN and not self.postgres:
            return int(value)
        return value

    def contains(self, text_sql: str) -> str:
        return f"strpos({text_sql}, %s) > 0" if self.postgres else f"instr({text_sql}, %s) > 0"

    # --- Metadata paths ------------------------------------------------------------------

    def metadata(self, c: Condition) -> tuple[str, list]:
        column = self.prefix + connection.ops.quote_name(METADATA)
        if self.postgres:
            return _PostgresPath(column, c.path).condition(c, self)
        if len(c.path) == 1:
            memory_id = self.prefix + connection.ops.quote_name("id")
            return _SqliteTopLevel(memory_id, c.path[0]).condition(c, self)
        return _SqlitePath(column, c.path).condition(c, self)


def _any_of(parts: list[tuple[str, list]]) -> tuple[str, list]:
    """`in`: the equalities of its values, any of which holds."""
    return (
        " OR ".join(f"({sql})" for sql, _ in parts),
        [param for _, params in parts for param in params],
    )


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int | float):
        return NUMBER
    return TEXT


class _SqliteTopLevel:
    """A top-level metadata key on SQLite, from the table of top-level values that triggers
    keep (migration 0024): `id IN (the memories whose value of this key ...)`, which SQLite
    answers from that table's index of keys and values instead of reading every memory's
    JSON. The value's JSON type (json_each's `type`) keeps comparisons typed."""

    TABLE = "memory_metadata_values"
    KINDS = {TEXT: "('text')", NUMBER: "('integer', 'real')"}

    def __init__(self, memory_id: str, key: str) -> None:
        self.memory_id = memory_id
        self.key = key

    def holding(self, sql: str, params: list) -> tuple[str, list]:
        return (
            f"{self.memory_id} IN (SELECT memory_id FROM {self.TABLE} WHERE key = %s AND {sql})",
            [self.key, *params],
        )

    @staticmethod
    def equal(value: Any) -> tuple[str, list]:
        if isinstance(value, bool):
            return "kind = %s", ["true" if value else "false"]
        return f"kind IN {_SqliteTopLevel.KINDS[_kind_of(value)]} AND atom = %s", [value]

    def condition(self, c: Condition, compiler: _Compiler) -> tuple[str, list]:
        if c.op == "exists":
            sql, params = self.holding("1", [])
            return (sql if c.value else f"NOT ({sql})"), params
        if c.op == "eq":
            return self.holding(*self.equal(c.value))
        if c.op == "in":
            sql, params = _any_of([self.equal(value) for value in c.value])
            return self.holding(f"({sql})", params)
        if c.op == "contains":
            return self.holding(f"kind = 'text' AND {compiler.contains('atom')}", [c.value])
        kinds = self.KINDS[_kind_of(c.value)]
        return self.holding(f"kind IN {kinds} AND atom {COMPARISONS[c.op]} %s", [c.value])


class _SqlitePath:
    """A metadata path with SQLite's JSON functions: json_type names the value's type (NULL
    when the path is missing), json_extract gives it as an SQL value."""

    TYPES = {TEXT: "('text')", NUMBER: "('integer', 'real')"}

    def __init__(self, column: str, path: tuple[str, ...]) -> None:
        self.column = column
        # Keys are letters, digits, _ and - (language.KEY_NAME): quoted, never escaped.
        self.path = "$" + "".join(f'."{key}"' for key in path)

    def typed(self, kind: str) -> tuple[str, list]:
        return f"json_type({self.column}, %s) IN {self.TYPES[kind]}", [self.path]

    def value(self) -> tuple[str, list]:
        return f"json_extract({self.column}, %s)", [self.path]

    def equal(self, value: Any) -> tuple[str, list]:
        if isinstance(value, bool):
            return f"json_type({self.column}, %s) = %s", [self.path, "true" if value else "false"]
        typed, typed_params = self.typed(_kind_of(value))
        extracted, params = self.value()
        return f"{typed} AND {extracted} = %s", [*typed_params, *params, value]

    def condition(self, c: Condition, compiler: _Compiler) -> tuple[str, list]:
        if c.op == "exists":
            sql = f"json_type({self.column}, %s) IS {'NOT ' if c.value else ''}NULL"
            return sql, [self.path]
        if c.op == "eq":
            return self.equal(c.value)
        if c.op == "in":
            return _any_of([self.equal(value) for value in c.value])
        extracted, params = self.value()
        if c.op == "contains":
            typed, typed_params = self.typed(TEXT)
            return f"{typed} AND {compiler.contains(extracted)}", [
                *typed_params,
                *params,
                c.value,
            ]
        typed, typed_params = self.typed(_kind_of(c.value))
        return f"{typed} AND {extracted} {COMPARISONS[c.op]} %s", [
            *typed_params,
            *params,
            c.value,
        ]


class _PostgresPath:
    """A metadata path on PostgreSQL's jsonb: `#>` gives the value (NULL when missing),
    jsonb_typeof its type, `#>>` its text."""

    TYPES = {TEXT: "string", NUMBER: "number", BOOLEAN: "boolean"}

    def __init__(self, column: str, path: tuple[str, ...]) -> None:
        self.column = column
        self.path = list(path)

    def typed(self, kind: str) -> tuple[str, list]:
        return f"jsonb_typeof({self.column} #> %s::text[]) = %s", [self.path, self.TYPES[kind]]

    def equal(self, value: Any) -> tuple[str, list]:
        # The containment the GIN index answers, and the type: an array holding the value
        # contains it too, and is no equal of it.
        nested: Any = value
        for key in reversed(self.path):
            nested = {key: nested}
        typed, params = self.typed(_kind_of(value))
        return f"{self.column} @> %s::jsonb AND {typed}", [json.dumps(nested), *params]

    def condition(self, c: Condition, compiler: _Compiler) -> tuple[str, list]:
        if c.op == "exists":
            sql = f"({self.column} #> %s::text[]) IS {'NOT ' if c.value else ''}NULL"
            return sql, [self.path]
        if c.op == "eq":
            return self.equal(c.value)
        if c.op == "in":
            return _any_of([self.equal(value) for value in c.value])
        text = f"({self.column} #>> %s::text[])"
        if c.op == "contains":
            typed, params = self.typed(TEXT)
            return f"{typed} AND {compiler.contains(text)}", [*params, self.path, c.value]
        kind = _kind_of(c.value)
        typed, params = self.typed(kind)
        operand = f"{text}::numeric" if kind == NUMBER else f'{text} COLLATE "C"'
        return f"{typed} AND {operand} {COMPARISONS[c.op]} %s", [*params, self.path, c.value]
