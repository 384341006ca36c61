"""The utility model: any OpenAI-compatible chat-completions endpoint. The only module that
calls the model provider. Timeouts, rate limits, server errors and malformed answers are
retried with exponential backoff, then reported as ExtractionFailed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from django.conf import settings

from extraction.parsing import MalformedOutput, find_json_object
from ops.metrics import observe_model_call

if TYPE_CHECKING:
    # The SDK (some 20 MB) is imported when the model is first called, not in every process
    # that imports extraction (web workers register the extraction tasks at start-up).
    import openai
    from openai.types.chat import ChatCompletionMessageParam

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _retryable() -> tuple[type[Exception], ...]:
    import openai

    return (
        openai.APITimeoutError,
        openai.APIConnectionError,
        openai.RateLimitError,
        openai.InternalServerError,
        MalformedOutput,
    )


class ExtractionFailed(Exception):
    def __init__(self, reason: str, attempts: int):
        super().__init__(reason)
        self.reason = reason
        self.attempts = attempts


def is_configured() -> bool:
    return bool(settings.LLM_BASE_URL and settings.LLM_MODEL)


def _as_is(payload: dict) -> dict:
    return payload


@overload
def complete_json(messages: list[ChatCompletionMessageParam]) -> tuple[dict, int]: ...


@overload
def complete_json(
    messages: list[ChatCompletionMessageParam], parse: Callable[[dict], T]
) -> tuple[T, int]: ...


def complete_json(
    messages: list[ChatCompletionMessageParam], parse: Callable[[dict], Any] = _as_is
) -> tuple[Any, int]:
    """`parse` applied to the JSON object the model answers to `messages`, and how many
    attempts it took. `parse` raising MalformedOutput counts as a malformed answer (retried).
    Raises ExtractionFailed."""
    import openai

    retryable = _retryable()
    client = openai.OpenAI(
        base_url=settings.LLM_BASE_URL,
        api_key=settings.LLM_API_KEY or "unused",
        timeout=settings.LLM_TIMEOUT_SECONDS,
        max_retries=0,  # retries are ours, so malformed answers are retried the same way
    )
    attempts = settings.EXTRACTION_LLM_ATTEMPTS
    last_error = "no attempt made"
    for attempt in range(1, attempts + 1):
        try:
            response = _create(client, messages)
            content = response.choices[0].message.content if response.choices else None
            # The answer holds what the conversation said about the user: DEBUG only.
            logger.debug("utility model answer, attempt %d: %s", attempt, content)
            return parse(find_json_object(content or "")), attempt
        except retryable as exc:
            last_error = f"{type(exc).__name__}: {exc}"[:300]
            logger.warning("utility model attempt %d/%d failed: %s", attempt, attempts, last_error)
        except openai.OpenAIError as exc:
            # A 400/401/404 will not get better by asking again.
            raise ExtractionFailed(f"{type(exc).__name__}: {exc}"[:300], attempt) from exc
        if attempt < attempts:
            time.sleep(settings.EXTRACTION_LLM_BACKOFF_SECONDS * 2 ** (attempt - 1))
    raise ExtractionFailed(last_error, attempts)


def _create(client: openai.OpenAI, messages: list[ChatCompletionMessageParam]):
    """One chat-completions call, timed for /metrics by outcome (ok, or the error's type)."""
    started = time.perf_counter()
    outcome = "ok"
    try:
        return client.chat.completions.create(
            model=settings.LLM_MODEL, messages=messages, temperature=0
        )
    except Exception as exc:
        outcome = type(exc).__name__
        raise
    finally:
        observe_model_call(outcome=outcome, seconds=time.perf_counter() - started)
