"""The service's errors. Services raise these; one DRF exception handler turns them into
the API's single error shape: {"code", "detail", "fields"}."""


class ServiceError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, detail: str, *, field: str | None = None, code: str | None = None):
        super().__init__(detail)
        self.detail = detail
        self.field = field
        if code:
            self.code = code

    @property
    def fields(self) -> dict[str, list[str]]:
        return {self.field: [self.detail]} if self.field else {}


class InvalidInput(ServiceError):
    status_code = 400
    code = "invalid"


class NotFound(ServiceError):
    status_code = 404
    code = "not_found"


class Forbidden(ServiceError):
    status_code = 403
    code = "permission_denied"


class Conflict(ServiceError):
    status_code = 409
    code = "conflict"


class EmbedderUnavailable(ServiceError):
    status_code = 503
    code = "embedder_unavailable"
