import pytest


@pytest.fixture
def llm(settings, fake_openai):
    """The real OpenAI client pointed at the fake provider on 127.0.0.1."""
    settings.LLM_BASE_URL = fake_openai.base_url
    settings.LLM_MODEL = "fake-model"
    settings.LLM_API_KEY = "k"
    settings.LLM_TIMEOUT_SECONDS = 5.0
    settings.EXTRACTION_LLM_BACKOFF_SECONDS = 0.01
    return fake_openai


@pytest.fixture
def no_llm(settings):
    """No utility model configured: the rule-based extractor runs."""
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""


@pytest.fixture
def policy_settings(settings):
    """Trigger-policy thresholds pinned to known values, whatever the environment says."""
    settings.EXTRACTION_USER_MESSAGES = 6
    settings.EXTRACTION_IDLE_MINUTES = 30.0
    settings.EXTRACTION_IDLE_MIN_USER_MESSAGES = 2
    settings.EXTRACTION_DENSE_AVERAGE_CHARS = 400
    settings.EXTRACTION_DENSE_MIN_USER_MESSAGES = 2
    settings.EXTRACTION_WORK_USER_MESSAGES = 10
    return settings
