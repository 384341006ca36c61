"""What the Python client tests share: a live service (pytest-django's live_server on the
test database, with a key) and clients of it that note every answer's status."""

from dataclasses import dataclass, field

import httpx
from memory_client import AsyncMemoryClient, MemoryClient

from tests.conftest import new_key


@dataclass
class Service:
    url: str
    key: str
    statuses: list[int] = field(default_factory=list)

    def _record(self, response: httpx.Response) -> None:
        self.statuses.append(response.status_code)

    async def _arecord(self, response: httpx.Response) -> None:
        self.statuses.append(response.status_code)

    def client(self, user_id: str | None = "alice", **options) -> MemoryClient:
        """A client whose httpx.Client notes each answer's status in `statuses`."""
        http = httpx.Client(timeout=30, event_hooks={"response": [self._record]})
        return MemoryClient(
            self.url, api_key=self.key, user_id=user_id, http_client=http, **options
        )

    def async_client(self, user_id: str | None = "alice", **options) -> AsyncMemoryClient:
        http = httpx.AsyncClient(timeout=30, event_hooks={"response": [self._arecord]})
        return AsyncMemoryClient(
            self.url, api_key=self.key, user_id=user_id, http_client=http, **options
        )


def live_service(live_server) -> Service:
    """The live server with a new read and write key."""
    return Service(url=live_server.url, key=new_key("read", "write"))
