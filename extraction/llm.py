"""The utility model: any OpenAI-compatible chat-completions endpoint. The only module that
calls the model provider. Timeouts, rate limits, server errors and malformed answers are
retried with exponential backoff, then reported as ExtractionFailed, whose reason names the
address and model when the provider could not be reached or answered an HTTP error."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload
from urllib.parse import urlsplit, urlunsplit

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


def address() -> str:
    """LLM_BASE_URL as logs and messages show it: without a user and password it may hold."""
    parts = urlsplit(settings.LLM_BASE_URL)
    if parts.username is None and parts.password is None:
        return settings.LLM_BASE_URL
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def extractor_describe() -> str:
    """Which extractor runs: the LLM's model and address (never its key), or the rules."""
    if is_configured():
        return f"the LLM {settings.LLM_MODEL} at {address()}"
    return "the rule extractor (no LLM_BASE_URL and LLM_MODEL set)"


def extractor_log() -> None:
    """One INFO line saying which extractor runs, for a process that starts serving requests or
    tasks (config/serving.py, config/celery.py): a configuration gone wrong shows at start-up,
    not in the first failed run."""
    logger.info("extraction: %s", extractor_describe())


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
    client = _client()
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
            last_error = _failure_reason(exc)
            logger.warning("utility model attempt %d/%d failed: %s", attempt, attempts, last_error)
        except openai.OpenAIError as exc:
            # A 400/401/404 will not get better by asking again.
            raise ExtractionFailed(_failure_reason(exc), attempt) from exc
        if attempt < attempts:
            time.sleep(settings.EXTRACTION_LLM_BACKOFF_SECONDS * 2 ** (attempt - 1))
    raise ExtractionFailed(last_error, attempts)


@dataclass(frozen=True)
class CheckAnswer:
    text: str
    seconds: float


# Small, and answerable by any chat model, so the check measures the way there and back.
CHECK_MESSAGES: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": "Answer with one word: ready"}
]


def check() -> CheckAnswer:
    """One small chat-completions request to the configured model, as extraction sends them
    but without retries: the answer and the seconds it took (manage.py check_llm). Raises
    ExtractionFailed when no LLM is configured, nothing answers, or the model answers an
    error."""
    import openai

    if not is_configured():
        raise ExtractionFailed("no LLM is configured (LLM_BASE_URL and LLM_MODEL)", 0)
    started = time.perf_counter()
    try:
        response = _create(_client(), CHECK_MESSAGES)
    except openai.OpenAIError as exc:
        raise ExtractionFailed(_failure_reason(exc), 1) from exc
    content = response.choices[0].message.content if response.choices else None
    return CheckAnswer(text=(content or "").strip(), seconds=time.perf_counter() - started)


def _client() -> openai.OpenAI:
    import openai

    return openai.OpenAI(
        base_url=settings.LLM_BASE_URL,
        api_key=settings.LLM_API_KEY or "unused",  # local servers take any key
        timeout=settings.LLM_TIMEOUT_SECONDS,
        max_retries=0,  # retries are ours, so malformed answers are retried the same way
    )


def _failure_reason(exc: Exception) -> str:
    """The error's type and message, led, when the provider could not be reached or answered
    an HTTP error, by the address and model asked: the SDK's "Connection error." alone does
    not show a wrong LLM_BASE_URL or model name. At most 300 characters (a run's reason)."""
    import openai

    asked = f"{address()} (model {settings.LLM_MODEL})"
    if isinstance(exc, openai.APITimeoutError):  # before its base class, APIConnectionError
        where = f"no answer in {settings.LLM_TIMEOUT_SECONDS:g} s from {asked}: "
    elif isinstance(exc, openai.APIConnectionError):
        where = f"could not connect to {asked}: "
    elif isinstance(exc, openai.APIStatusError):
        where = f"{asked} answered HTTP {exc.status_code}: "
    else:
        where = ""
    return f"{where}{type(exc).__name__}: {exc}"[:300]


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
