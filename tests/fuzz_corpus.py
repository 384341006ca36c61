"""Odd-byte requests for every GET, POST, PUT and PATCH route of the OpenAPI schema, the
inputs issue 22's probe answered 500 to and their neighbours: lone surrogates escaped in JSON
("\\ud800") as keys and values of every body field, NUL bytes (escaped and raw) in paths,
queries, headers and JSON strings, invalid UTF-8 in paths, queries, headers and bodies, bodies
over the size limit or claiming to be, JSON nested 100,000 deep, integers of 5,000 digits and
past 64 bits, Infinity and NaN, chunked bodies, a negative Content-Length and content types
the route does not take. Used by tests/test_fuzz.py.

Requests are written as bytes and sent over a plain socket (http.client would refuse a raw
NUL in the request line), on a kept-alive connection unless the request's framing makes the
server's reading of the next request on it uncertain."""

import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

ZERO_UUID = "00000000-0000-0000-0000-000000000000"
LONE_SURROGATES = ('"\\ud800"', '"\\udfff"', '"tea \\udc80 time"')

# Path parameter values: each replaces one parameter of a templated route, already as sent.
PATH_VALUES = {
    "nul in path (escaped)": "a%00b",
    "invalid utf-8 in path": "%ff%fe",
    "utf-8 encoded surrogate in path": "%ed%a0%80",
    "lone surrogate escape in path": "%5Cud800",
    "huge number in path": "9" * 40,
    "negative number in path": "-1",
    "long path segment": "a" * 5000,
    "dot segments in path": "%2e%2e",
}
# Query values: each is sent for every declared query parameter of a route.
QUERY_VALUES = {
    "nul in query": "a%00b",
    "invalid utf-8 in query": "%ff",
    "utf-8 encoded surrogate in query": "%ed%a0%80",
    "huge integer in query": "9" * 5000,
    "integer past 64 bits in query": "9223372036854775808",
    "negative integer past 64 bits in query": "-9223372036854775809",
    "NaN in query": "NaN",
    "Infinity in query": "1e400",
    "empty query value": "",
    "long query value": "a" * 10000,
}
# JSON values, as text: each is put in every field of a route's body.
FIELD_VALUES = {
    "lone surrogate value": '"\\ud800"',
    "lone surrogate inside text": '"Likes \\udfff tea"',
    "nul in json string": '"a\\u0000b"',
    "huge integer in json": "9" * 5000,
    "integer past 64 bits in json": "-9223372036854775809",
    "float overflow in json": "1e400",
    "NaN in json": "NaN",
    "lone surrogate key in nested object": '{"\\udfff": "x"}',
    "lone surrogate in list": '["\\ud800"]',
    "long string in json": json.dumps("x" * 200_000),
}


@dataclass(frozen=True)
class OddRequest:
    kind: str
    method: str
    route: str  # the schema's path template, for grouping
    target: bytes  # path and query as sent
    headers: tuple[tuple[bytes, bytes], ...] = ()
    body: bytes | None = None
    # Framing the server may not consume cleanly: sent on a connection of its own.
    close: bool = False
    # Send the headers as given, without Content-Length (chunked or a lying length).
    framed: bool = False
    # Stop sending after the body (shut the socket for writing), as a client that gives up.
    cut_short: bool = False
    # The body field the odd value was put in, if any.
    field: str = ""

    def describe(self) -> str:
        body = repr(self.body[:200]) if self.body is not None else "-"
        where = f" in {self.field}" if self.field else ""
        return f"{self.method} {self.target[:300]!r} [{self.kind}{where}] body {body}"


@dataclass
class Answer:
    status: int
    content_type: str
    body: bytes


@dataclass
class Route:
    method: str
    template: str
    path_params: list[str]
    query_params: list[str]
    body_fields: list[str] = field(default_factory=list)
    base_body: dict | None = None
    content_type: str | None = None  # None: the route takes no body


def routes_from_schema(schema: dict, tools: dict[str, dict]) -> list[Route]:
    """Every GET, POST, PUT and PATCH of the OpenAPI schema (DELETE is left out: its odd paths
    are the GET's). The tool call route becomes one route per tool, with the tool's fields."""
    routes = []
    for template, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch"}:
                continue
            parameters = operation.get("parameters", [])
            path_params = [p["name"] for p in parameters if p["in"] == "path"]
            query_params = [p["name"] for p in parameters if p["in"] == "query"]
            content = operation.get("requestBody", {}).get("content", {})
            content_type = next(iter(content), None) if method != "get" else None
            if content_type is None and method != "get":
                content_type = "application/json"  # a POST without a body still gets one
            body_schema = _resolve(schema, content.get(content_type, {}).get("schema", {}))
            fields = list(body_schema.get("properties", {}))
            required = body_schema.get("required", [])
            base = {name: _sample(schema, body_schema["properties"][name]) for name in required}
            if template == "/api/tools/{name}":
                for name, tool in tools.items():
                    properties = tool.get("properties", {})
                    routes.append(
                        Route(
                            method=method.upper(),
                            template=f"/api/tools/{name}",
                            path_params=[],
                            query_params=query_params,
                            body_fields=list(properties),
                            base_body={
                                key: _sample(schema, properties[key])
                                for key in tool.get("required", [])
                            },
                            content_type=content_type,
                        )
                    )
                continue
            routes.append(
                Route(
                    method=method.upper(),
                    template=template,
                    path_params=path_params,
                    query_params=query_params,
                    body_fields=fields,
                    base_body=base if content_type else None,
                    content_type=content_type,
                )
            )
    return routes


def _resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _sample(schema: dict, node: dict):
    """A plain valid-looking value for a required field, so that the odd field is the one
    the route trips on."""
    node = _resolve(schema, node)
    for option in node.get("oneOf", []) + node.get("anyOf", []) + node.get("allOf", []):
        return _sample(schema, option)
    if "enum" in node:
        return next((value for value in node["enum"] if value is not None), "fuzz")
    kind = node.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "array":
        item = node.get("items", {})
        return [_sample(schema, item)] if node.get("minItems") else []
    if kind == "object":
        return {
            name: _sample(schema, node["properties"][name]) for name in node.get("required", [])
        }
    return {"integer": 1, "number": 0.5, "boolean": True}.get(kind, "fuzz corpus")


def corpus(routes: list[Route], *, ids: dict[str, str], body_limit: int) -> Iterator[OddRequest]:
    """The odd requests for `routes`, with real ids (`ids`, by collection path or parameter
    name) in the path parameters a case does not make odd, so that the odd part reaches the
    route's own code rather than a 404 on the id."""
    for route in routes:
        yield from _path_cases(route, ids)
        yield from _query_cases(route, ids)
        yield from _header_cases(route, ids)
        if route.content_type is not None:
            yield from _body_cases(route, ids, body_limit)


def _path(route: Route, ids: dict[str, str], odd: dict[str, str] | None = None) -> str:
    path = route.template
    collection = route.template.split("/{", 1)[0]
    for name in route.path_params:
        value = (odd or {}).get(name) or quote(ids.get(name) or ids.get(collection, ZERO_UUID))
        path = path.replace("{" + name + "}", value)
    return path


def _request(route: Route, kind: str, target: str | bytes, **kwargs) -> OddRequest:
    if isinstance(target, str):
        target = target.encode("latin-1")
    return OddRequest(kind=kind, method=route.method, route=route.template, target=target, **kwargs)


def _with_body(route: Route) -> dict:
    """Headers and body a route needs for its odd path, query or header to be read."""
    if route.content_type is None:
        return {}
    return {
        "headers": ((b"Content-Type", route.content_type.encode()),),
        "body": _encode_body(route, json.dumps(route.base_body or {})),
    }


def _encode_body(route: Route, text: str) -> bytes:
    """A body's JSON text as the route takes it: one NDJSON line for the import."""
    if route.content_type == "application/x-ndjson":
        return text.encode("utf-8", "surrogatepass") + b"\n"
    return text.encode("utf-8", "surrogatepass")


def _path_cases(route: Route, ids: dict[str, str]) -> Iterator[OddRequest]:
    for name in route.path_params:
        for kind, value in PATH_VALUES.items():
            yield _request(route, kind, _path(route, ids, {name: value}), **_with_body(route))
        raw = _path(route, ids, {name: "a\x00b"})
        yield _request(route, "raw nul in path", raw, **_with_body(route))
        raw = _path(route, ids).encode() + b"/\xff"
        yield _request(route, "raw invalid utf-8 in path", raw, **_with_body(route))


def _query_cases(route: Route, ids: dict[str, str]) -> Iterator[OddRequest]:
    path = _path(route, ids)
    for name in route.query_params:
        for kind, value in QUERY_VALUES.items():
            yield _request(route, kind, f"{path}?{name}={value}", **_with_body(route))
        yield _request(route, "repeated query parameter", f"{path}?{name}=1&{name}=2")
        yield _request(
            route, "raw nul in query", f"{path}?{name}=a\x00b".encode(), **_with_body(route)
        )
    yield _request(route, "nul as a query name", f"{path}?%00=%00", **_with_body(route))
    yield _request(route, "invalid utf-8 query name", f"{path}?%ff%fe=1", **_with_body(route))


HEADER_CASES = {
    "nul in X-User-Id": (b"X-User-Id", b"a\x00b"),
    "invalid utf-8 in X-User-Id": (b"X-User-Id", b"\xff\xfe"),
    "long X-User-Id": (b"X-User-Id", b"u" * 10000),
    "lone surrogate escape in X-User-Id": (b"X-User-Id", b"\\ud800"),
    "nul in Authorization": (b"Authorization", b"Bearer mem_\x00"),
    "invalid utf-8 in Authorization": (b"Authorization", b"Bearer \xff\xfe"),
    "nul in X-Request-Id": (b"X-Request-Id", b"req\x00id"),
    "invalid utf-8 in X-Request-Id": (b"X-Request-Id", b"\xff\xfe"),
    "odd Accept": (b"Accept", b"application/json; q=NaN, \x00/\xff"),
    "nul in User-Agent": (b"User-Agent", b"agent\x00x"),
    "invalid utf-8 in User-Agent": (b"User-Agent", b"agent \xff\xfe"),
    "nul in Host": (b"Host", b"127.0.0.1\x00.evil"),
    "invalid utf-8 in Accept-Language": (b"Accept-Language", b"\xff\xfe;q=1"),
}


def _header_cases(route: Route, ids: dict[str, str]) -> Iterator[OddRequest]:
    path = _path(route, ids)
    plain = _with_body(route)
    for kind, header in HEADER_CASES.items():
        yield _request(
            route,
            kind,
            path,
            headers=(*plain.get("headers", ()), header),
            body=plain.get("body"),
        )


def _body_cases(route: Route, ids: dict[str, str], body_limit: int) -> Iterator[OddRequest]:
    path = _path(route, ids)
    json_type = (b"Content-Type", route.content_type.encode())
    base = route.base_body or {}
    base_text = json.dumps(base)

    def body(kind: str, data: bytes, content_type=json_type, extra=None, **kwargs) -> OddRequest:
        headers = tuple(header for header in (content_type, extra) if header)
        return _request(route, kind, path, headers=headers, body=data, **kwargs)

    def with_field(name: str, value_text: str) -> str:
        others = {key: value for key, value in base.items() if key != name}
        inner = json.dumps(others)[1:-1]
        return "{" + (inner + ", " if inner else "") + json.dumps(name) + ": " + value_text + "}"

    for name in route.body_fields or ["key", "value"]:
        for kind, value_text in FIELD_VALUES.items():
            yield body(kind, _encode_body(route, with_field(name, value_text)), field=name)
    for surrogate in LONE_SURROGATES:
        text = "{" + surrogate + ": 1" + (", " + base_text[1:] if base else "}")
        yield body("lone surrogate as a key", _encode_body(route, text))
    yield body("invalid utf-8 in a string", base_text[:-1].encode() + b', "x": "\xff\xfe"}')
    yield body("utf-8 encoded surrogate", base_text[:-1].encode() + b', "x": "\xed\xa0\x80"}')
    yield body("overlong utf-8 encoding", base_text[:-1].encode() + b', "x": "\xc0\xaf"}')
    yield body("raw nul in the body", base_text.encode() + b"\x00")
    yield body("nul byte inside a raw string", base_text[:-1].encode() + b', "x": "a\x00b"}')
    yield body("truncated json", base_text.encode()[:-1] + b', "x": ')
    yield body("empty body", b"")
    for literal in (b"null", b"[]", b"1", b'"text"', b"true", b"[null]", b"{}" * 2):
        yield body(f"json {literal.decode()} as the body", literal)
    yield body("json nested 100,000 deep (arrays)", b"[" * 100_000 + b"]" * 100_000)
    yield body("json nested 100,000 deep (objects)", b'{"a":' * 100_000 + b"1" + b"}" * 100_000)
    yield body("byte order mark", b"\xef\xbb\xbf" + base_text.encode())
    yield body("utf-16 body", base_text.encode("utf-16"))
    yield body("duplicate keys", _encode_body(route, base_text[:-1] + ', "key": 1, "key": 2}'))
    overlong = base_text[:-1] + (", " if base else "") + '"x": "' + "a" * body_limit + '"}'
    yield body("body over the limit", overlong.encode(), close=True)
    data = base_text.encode()
    huge = (b"Content-Length", b"1000000000000")
    yield body("Content-Length claims a terabyte", b"{}", framed=True, close=True, extra=huge)
    negative = (b"Content-Length", b"-1")
    yield body("negative Content-Length", b"{}", framed=True, close=True, extra=negative)
    yield body(
        "body cut short by the client",
        data[: len(data) // 2],
        framed=True,
        close=True,
        cut_short=True,
        extra=(b"Content-Length", str(len(data) + 5000).encode()),
    )
    chunked = (b"Transfer-Encoding", b"chunked")
    chunks = f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n\r\n"
    yield body("chunked body", chunks, framed=True, close=True, extra=chunked)
    bad_chunks = b"zz\r\n" + data + b"\r\n0\r\n\r\n"
    yield body("malformed chunked body", bad_chunks, framed=True, close=True, extra=chunked)
    for content_type in (
        b"text/plain",
        b"application/xml",
        b"multipart/form-data; boundary=zzz",
        b"multipart/form-data",
        b"application/json; charset=utf-16",
        b"application/json; charset=bogus-\xff",
        b"application/x-ndjson",
        b"application/json",
        b"\x00/\xff",
    ):
        yield body(
            f"Content-Type {content_type!r}", data, content_type=(b"Content-Type", content_type)
        )
    form = b"key=%ff%fe&value=a%00b&%ed%a0%80=1"
    yield body(
        "form body with odd bytes",
        form,
        content_type=(b"Content-Type", b"application/x-www-form-urlencoded"),
    )
    yield body("no Content-Type", data, content_type=None)


def encode(request: OddRequest, *, host: bytes, auth: tuple[tuple[bytes, bytes], ...]) -> bytes:
    """The request as bytes: the caller's credentials unless the case sets that header."""
    own = {name.lower() for name, _ in request.headers}
    headers = [(b"Host", host)] if b"host" not in own else []
    headers += [(name, value) for name, value in auth if name.lower() not in own]
    headers += list(request.headers)
    body = request.body
    if body is not None and not request.framed:
        headers.append((b"Content-Length", str(len(body)).encode()))
    if request.close:
        headers.append((b"Connection", b"close"))
    head = request.method.encode() + b" " + request.target + b" HTTP/1.1\r\n"
    head += b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return head + b"\r\n" + (body or b"")


class Client:
    """One kept-alive connection to the server, opened again when the server closes it."""

    def __init__(self, host: str, port: int) -> None:
        self.address = (host, port)
        self.sock: socket.socket | None = None

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def send(self, request: OddRequest, data: bytes) -> Answer:
        for attempt in range(2):
            reused = self.sock is not None and not request.close
            if request.close:
                self.close()
            if self.sock is None:
                self.sock = socket.create_connection(self.address, timeout=120)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                self.sock.sendall(data)
                if request.cut_short:
                    self.sock.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server may answer (413) before it reads all of a body
            try:
                response = http.client.HTTPResponse(self.sock, method=request.method)
                response.begin()
                body = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if reused and attempt == 0:
                    continue  # the server had closed the idle connection: once more
                raise
            if response.will_close or request.close:
                self.close()
            return Answer(response.status, response.getheader("Content-Type", ""), body)
        raise AssertionError("unreachable")
