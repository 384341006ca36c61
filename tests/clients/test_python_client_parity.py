"""MemoryClient and AsyncMemoryClient offer the same methods: same names, parameters,
defaults, answers and docstrings, the async ones awaited (memory_client.endpoints writes the
one-request methods once; the others are written in each client, and this keeps them
together). No service needed: the clients are only inspected."""

import inspect

import pytest
from memory_client import AsyncMemoryClient, MemoryClient

# Closing is the one thing spelt differently: close() and `with`, aclose() and `async with`.
SYNC_ONLY = {"close", "__enter__", "__exit__"}
ASYNC_ONLY = {"aclose", "__aenter__", "__aexit__"}
# Not awaited on the async client either: they send nothing (list() is an async iterator).
NOT_AWAITED = {"with_user", "list"}


def public_methods(cls: type) -> set[str]:
    return {
        name
        for name in dir(cls)
        if (not name.startswith("_") or name in SYNC_ONLY | ASYNC_ONLY)
        and callable(getattr(cls, name))
    }


SHARED = sorted(public_methods(MemoryClient) - SYNC_ONLY)


def comparable(method: object) -> tuple[list[tuple[str, object, object, str]], str]:
    """A method's parameters and answer, with an async iterator read as an iterator: an
    async def's return annotation is already the awaited value."""
    signature = inspect.signature(method, eval_str=True)
    parameters = [
        (parameter.name, parameter.kind, parameter.default, str(parameter.annotation))
        for parameter in signature.parameters.values()
    ]
    answer = str(signature.return_annotation).replace(
        "collections.abc.AsyncIterator[", "collections.abc.Iterator["
    )
    return parameters, answer


def test_each_client_has_the_others_methods():
    assert public_methods(MemoryClient) - SYNC_ONLY == public_methods(AsyncMemoryClient) - (
        ASYNC_ONLY
    )
    assert SYNC_ONLY <= public_methods(MemoryClient)
    assert ASYNC_ONLY <= public_methods(AsyncMemoryClient)
    # The API's methods, so that a filter above gone wrong cannot pass on an empty list.
    assert {"save", "search", "list", "iter_memories", "erase_user", "call_tool"} <= set(SHARED)


@pytest.mark.parametrize("name", SHARED)
def test_a_method_takes_and_answers_the_same_on_both_clients(name):
    sync, asynchronous = getattr(MemoryClient, name), getattr(AsyncMemoryClient, name)

    assert comparable(sync) == comparable(asynchronous)
    assert inspect.getdoc(sync) == inspect.getdoc(asynchronous)


@pytest.mark.parametrize("name", SHARED)
def test_the_async_clients_methods_are_awaited_and_the_sync_ones_not(name):
    sync, asynchronous = getattr(MemoryClient, name), getattr(AsyncMemoryClient, name)

    assert not inspect.iscoroutinefunction(sync)
    assert not inspect.isgeneratorfunction(sync) or name == "iter_memories"
    if name == "iter_memories":
        assert inspect.isasyncgenfunction(asynchronous)
    elif name in NOT_AWAITED:
        assert not inspect.iscoroutinefunction(asynchronous)
    else:
        assert inspect.iscoroutinefunction(asynchronous)


def test_bound_methods_show_their_own_parameters():
    # What help() and an IDE show on a client: the builder's parameters after self, and
    # the answer rather than the Call that asks for it.
    client = MemoryClient("http://127.0.0.1:1")
    signature = inspect.signature(client.search, eval_str=True)
    assert list(signature.parameters) == ["query", "top_k", "filter", "context"]
    assert signature.parameters["top_k"].default == 10
    assert "RecallResult" in str(signature.return_annotation)
    assert str(inspect.signature(MemoryClient.delete)).endswith("-> None")
    client.close()
