"""The JSON body of every error answer: the API's, the middleware's, the login throttle's and
the operations endpoints' alike, so a client reads one shape."""


def error_body(code: str, detail: str, fields: dict | None = None) -> dict:
    return {"code": code, "detail": detail, "fields": fields or {}}
