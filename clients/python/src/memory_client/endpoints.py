"""The API's methods, written once for both clients. Each is a memory_client.calls builder
made a method by `endpoint`: on a MemoryClient it sends the Call through run() and returns
the answer, on an AsyncMemoryClient it is a coroutine function awaiting run(). The builder's
parameters, defaults and docstring are the method's, for mypy and IDEs (through the
ParamSpec) and at run time (inspect.signature, help()).

What cannot be one request (following pages, erasing the user after finding who they are)
is written in each client."""

import inspect
import types
import typing
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memory_client import calls
from memory_client.calls import Call

if TYPE_CHECKING:
    from memory_client.async_client import AsyncMemoryClient
    from memory_client.client import MemoryClient

P = ParamSpec("P")
T = TypeVar("T")


class endpoint(Generic[P, T]):
    """A client method made of a call builder. Which client a method is for is read from
    its class's run(): a coroutine function there makes the method one too."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self.build = build
        self._sending = _like(build, _sending(build))
        self._awaiting = _like(build, _awaiting(build))

    def __set_name__(self, owner: type, name: str) -> None:
        for method in (self._sending, self._awaiting):
            method.__qualname__ = f"{owner.__qualname__}.{name}"

    @overload
    def __get__(
        self, client: None, owner: type["MemoryClient"]
    ) -> Callable[Concatenate["MemoryClient", P], T]: ...

    @overload
    def __get__(
        self, client: None, owner: type["AsyncMemoryClient"]
    ) -> Callable[Concatenate["AsyncMemoryClient", P], Coroutine[Any, Any, T]]: ...

    @overload
    def __get__(self, client: "MemoryClient", owner: Any) -> Callable[P, T]: ...

    @overload
    def __get__(
        self, client: "AsyncMemoryClient", owner: Any
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...

    def __get__(self, client: Any, owner: Any) -> Any:
        awaited = inspect.iscoroutinefunction(getattr(owner, "run", None))
        method = self._awaiting if awaited else self._sending
        # Looked up on the class, the plain function, as a method defined there would be.
        return method if client is None else types.MethodType(method, client)


def _sending(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    def method(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return client.run(build(*args, **kwargs))

    return method


def _awaiting(build: Callable[..., Call[Any]]) -> Callable[..., Any]:
    async def method(client: Any, /, *args: Any, **kwargs: Any) -> Any:
        return await client.run(build(*args, **kwargs))

    return method


def _like(build: Callable[..., Call[Any]], method: Callable[..., Any]) -> Callable[..., Any]:
    """`method` named, documented and signed as the builder, with `self` first and the
    call's answer as its return annotation (an async def's is its awaited value too)."""
    signature = inspect.signature(build, eval_str=True)
    [answer] = typing.get_args(signature.return_annotation)
    if answer is type(None):  # Call[None]'s argument; a method's annotation spells it None
        answer = None
    parameters = list(signature.parameters.values())
    first = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    # inspect.signature reads __signature__ first, so the wrapper's (*args, **kwargs) and
    # the builder's Call[...] return annotation never show.
    vars(method).update(
        __signature__=signature.replace(parameters=[first, *parameters], return_annotation=answer),
        __wrapped__=build,  # inspect.getsource() and IDEs' "go to definition": the builder
    )
    method.__name__ = method.__qualname__ = build.__name__
    method.__doc__ = build.__doc__
    method.__annotations__ = {
        **{parameter.name: parameter.annotation for parameter in parameters},
        "return": answer,
    }
    return method


class Endpoints:
    """Every API method that is one request, for MemoryClient and AsyncMemoryClient."""

    # Memories
    save = endpoint(calls.save)
    save_many = endpoint(calls.save_many)
    search = endpoint(calls.search)
    search_explained = endpoint(calls.search_explained)
    context = endpoint(calls.context)
    get = endpoint(calls.get)
    update = endpoint(calls.update)
    delete = endpoint(calls.delete)
    restore = endpoint(calls.restore)
    export = endpoint(calls.export)

    # The user
    me = endpoint(calls.me)
    profile = endpoint(calls.profile)

    # Conversations and extraction
    create_topic = endpoint(calls.create_topic)
    create_project = endpoint(calls.create_project)
    add_messages = endpoint(calls.add_messages)
    extract = endpoint(calls.extract)
    extraction_run = endpoint(calls.extraction_run)

    # Entities
    entities = endpoint(calls.entities)
    entity = endpoint(calls.entity)
    update_entity = endpoint(calls.update_entity)
    merge_entities = endpoint(calls.merge_entities)

    # Tools
    tools = endpoint(calls.tools)
    call_tool = endpoint(calls.call_tool)
