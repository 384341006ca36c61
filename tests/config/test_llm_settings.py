"""The utility model's settings (config/settings_extraction.py): LLM_BASE_URL and LLM_MODEL
both or neither, LLM_API_KEY only with them, and an http(s) address; anything else stops
start-up with one line naming what is missing and how to set it."""

import subprocess

import pytest

from tests.processes import run_python

BASE_URL_HOW = (
    "set LLM_BASE_URL to the provider's OpenAI-compatible address (https://api.openai.com/v1 "
    "for OpenAI, http://localhost:11434/v1 for Ollama)"
)
MODEL_HOW = (
    "set LLM_MODEL to the name of the provider's chat model (gpt-4o-mini for OpenAI, "
    "llama3.1 for Ollama)"
)


def manage(*arguments: str, **variables: str) -> subprocess.CompletedProcess:
    """manage.py in a process of its own, with the real settings and only these LLM_*."""
    return run_python(
        ["manage.py", *arguments],
        drop=("DJANGO_SETTINGS_MODULE",),
        drop_prefixes=("LLM_",),
        SECRET_KEY="test-only-secret-key",
        EMBEDDER="none",
        **variables,
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        (
            {"LLM_MODEL": "gpt-4o-mini"},
            f"LLM_MODEL is set but LLM_BASE_URL is not: {BASE_URL_HOW}, or unset LLM_MODEL "
            "to use the rule extractor",
        ),
        (
            {"LLM_MODEL": "gpt-4o-mini", "LLM_API_KEY": "sk-test"},
            f"LLM_MODEL and LLM_API_KEY are set but LLM_BASE_URL is not: {BASE_URL_HOW}, or "
            "unset LLM_MODEL and LLM_API_KEY to use the rule extractor",
        ),
        (
            {"LLM_BASE_URL": "http://localhost:11434/v1"},
            f"LLM_BASE_URL is set but LLM_MODEL is not: {MODEL_HOW}, or unset LLM_BASE_URL "
            "to use the rule extractor",
        ),
        (
            {"LLM_API_KEY": "sk-test"},
            f"LLM_API_KEY is set but LLM_BASE_URL and LLM_MODEL are not: {BASE_URL_HOW} and "
            f"{MODEL_HOW}, or unset LLM_API_KEY to use the rule extractor",
        ),
    ],
    ids=["model only", "model and key", "address only", "key only"],
)
def test_half_a_model_configuration_stops_start_up_naming_what_is_missing(variables, message):
    done = manage("check", **variables)

    assert done.returncode != 0
    assert done.stderr.strip() == f"ImproperlyConfigured: {message}", done.stderr
    assert "sk-test" not in done.stderr
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        # Without the scheme, the usual slip: urlsplit reads "localhost" as one.
        ("localhost:11434/v1", "LLM_BASE_URL='localhost:11434/v1'"),
        ("user:hunter2@models.example.com/v1", "LLM_BASE_URL (not shown: it holds an @)"),
    ],
    ids=["no scheme", "a password"],
)
def test_an_address_that_is_not_an_http_url_stops_start_up(address, shown):
    done = manage("check", LLM_BASE_URL=address, LLM_MODEL="llama3.1")

    assert done.returncode != 0
    assert done.stderr.strip() == (
        f"ImproperlyConfigured: {shown}: expected an http(s) URL such as "
        "https://api.openai.com/v1 or http://localhost:11434/v1"
    )
    assert "hunter2" not in done.stderr


@pytest.mark.parametrize(
    "variables",
    [
        # A local server (Ollama, vLLM) takes no key.
        {"LLM_BASE_URL": "http://localhost:11434/v1", "LLM_MODEL": "llama3.1"},
        {"LLM_BASE_URL": " http://[::1]:8000/v1 ", "LLM_MODEL": "m", "LLM_API_KEY": "k"},
        # Empty counts as unset, as for every variable.
        {"LLM_BASE_URL": "", "LLM_MODEL": " ", "LLM_API_KEY": ""},
    ],
    ids=["ollama without a key", "ipv6 with a key", "empty values"],
)
def test_a_whole_model_configuration_or_none_starts(variables):
    done = manage("check", **variables)

    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
