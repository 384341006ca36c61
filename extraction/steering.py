"""What a product steers of extraction, per tenant and per project (ExtractionSettings): free
instructions (what to remember, what never to keep), the categories memories go in, the
vocabulary of keys, the language memories are written in, and classes of data never kept.

The settings reach the model as data: a fenced, labelled block at the head of the user
message (prompt.build_messages), never in the system prompt, which alone says what the answer
looks like; a setting can therefore change what is remembered, not the answer's shape. What
a pattern can tell is checked again on the answer (excluded()): a card number by its
checksum, an IBAN by its own, government ids and passwords by their formats and the words
around them, whatever the model proposed.

A project's settings add to its tenant's: instructions follow the tenant's, keys join the
tenant's vocabulary, exclusions join the tenant's; categories and language, when the project
names them, replace the tenant's. A tenant without settings has the defaults below."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memories.entities.names import fold

# The classes a product may exclude, as the prompt names them.
EXCLUSIONS = {
    "payment_cards": "payment card numbers (credit and debit cards, their CVV and expiry)",
    "bank_accounts": "bank account numbers and IBANs",
    "government_ids": "passport, national identity, driving licence, social security and tax "
    "numbers",
    "passwords": "passwords, PINs, passcodes, recovery codes and other secrets",
    "health": "health conditions, diagnoses, symptoms, medication and other medical details",
}
# Secrets nobody wants remembered: excluded unless a tenant's settings say otherwise.
DEFAULT_EXCLUDE = frozenset({"payment_cards", "bank_accounts", "government_ids", "passwords"})
# The rule extractor's keys (extraction/rules.py), the vocabulary without settings.
DEFAULT_KEYS: tuple[tuple[str, str], ...] = (
    ("name", "the user's name"),
    ("preferred name", "what the user wants to be called"),
    ("home", "where the user lives now (city, country)"),
    ("origin", "where the user comes from"),
    ("job", "the user's occupation"),
    ("employer", "the organisation the user works for"),
    ("diet", "what the user eats or avoids: vegetarian, vegan, halal, ..."),
    ("allergy to <x>", "an allergy, one key per allergen"),
    ("favourite <x>", "a favourite thing, one key per kind of thing"),
    ("languages", "the languages the user speaks"),
)
INSTRUCTIONS_MAX_CHARS = 4000
CATEGORIES_MAX = 30
KEYS_MAX = 100
DESCRIPTION_MAX_CHARS = 200
LANGUAGE_MAX_CHARS = 40
# What the prompt lists of the user's current memories, to reuse their keys.
CURRENT_KEYS_MAX = 60
CURRENT_VALUE_MAX_CHARS = 120
# Health words in a category the model chose: the class "health" drops the memory.
HEALTH_CATEGORIES = frozenset({"health", "medical", "medication", "medicine", "diagnosis"})

FENCE_OPEN = "<<<product-settings"
FENCE_CLOSE = "product-settings>>>"


@dataclass(frozen=True)
class Steering:
    """The settings in force for one source (steering_for)."""

    instructions: str = ""
    categories: tuple[tuple[str, str], ...] = ()
    keys: tuple[tuple[str, str], ...] = DEFAULT_KEYS
    language: str = ""
    exclude: frozenset[str] = field(default_factory=lambda: DEFAULT_EXCLUDE)


def _pairs(items: Iterable[dict], name: str) -> tuple[tuple[str, str], ...]:
    return tuple((item[name], item.get("description", "")) for item in items)


def steering_for(*, tenant_id, project_id=None) -> Steering:
    """The settings for a source of this tenant, in this project (None: none)."""
    from extraction.models import ExtractionSettings

    rows = {
        row.project_id: row
        for row in ExtractionSettings.objects.filter(tenant_id=tenant_id, project__isnull=True)
    }
    if project_id is not None:
        rows.update(
            {
                row.project_id: row
                for row in ExtractionSettings.objects.filter(
                    tenant_id=tenant_id, project_id=project_id
                )
            }
        )
    tenant, project = rows.get(None), rows.get(project_id) if project_id else None
    if tenant is None and project is None:
        return Steering()
    keys = list(_pairs(tenant.keys, "key")) if tenant and tenant.keys else list(DEFAULT_KEYS)
    exclude = set(tenant.exclude) if tenant is not None else set(DEFAULT_EXCLUDE)
    instructions = tenant.instructions if tenant else ""
    categories = _pairs(tenant.categories, "name") if tenant else ()
    language = tenant.language if tenant else ""
    if project is not None:
        instructions = "\n\n".join(part for part in (instructions, project.instructions) if part)
        known = {fold(key) for key, _ in keys}
        keys += [pair for pair in _pairs(project.keys, "key") if fold(pair[0]) not in known]
        exclude |= set(project.exclude)
        categories = _pairs(project.categories, "name") or categories
        language = project.language or language
    return Steering(
        instructions=instructions,
        categories=tuple(categories),
        keys=tuple(keys),
        language=language,
        exclude=frozenset(exclude),
    )


def settings_save(*, tenant, project, fields: dict):
    """Store the settings of a tenant (project None) or of one of its projects, as the API's
    serializer validated them (the API and the review page both write through here)."""
    from django.db import transaction

    from extraction.models import ExtractionSettings

    with transaction.atomic():
        row, _ = ExtractionSettings.objects.update_or_create(
            tenant=tenant, project=project, defaults=fields
        )
    return row


def _data(text: str) -> str:
    """A setting's text as data: the fence's own marks cannot end the block early."""
    return text.replace("<<<", "‹‹‹").replace(">>>", "›››")


def prompt_block(steering: Steering, current: Sequence[tuple[str, str]]) -> str:
    """The fenced block at the head of the user message: the product's settings and the
    user's current memories by key (at most CURRENT_KEYS_MAX), as data."""
    lines: list[str] = []
    if steering.instructions:
        lines += ["What the product asks to remember and never to keep:", steering.instructions]
    if steering.categories:
        lines.append("Categories (put each memory in one of these):")
        lines += [f"- {name}: {description}" for name, description in steering.categories]
    lines.append("Keys (reuse the key that names the fact; a new key only for a new kind):")
    lines += [f"- {key}: {description}" for key, description in steering.keys]
    if current:
        lines.append(
            "The user's current memories by key (a new value for one of these facts keeps "
            'its key and names it in "replaces"):'
        )
        lines += [
            f"- {key}: {value[:CURRENT_VALUE_MAX_CHARS]}"
            for key, value in current[:CURRENT_KEYS_MAX]
        ]
    if steering.exclude:
        lines.append("Never keep:")
        lines += [f"- {EXCLUSIONS[name]}" for name in sorted(steering.exclude)]
    if steering.language:
        lines.append(f"Language: write every memory in {steering.language}.")
    else:
        lines.append("Language: write each memory in the language the user wrote it in.")
    return "\n".join([FENCE_OPEN, *(_data(line) for line in lines), FENCE_CLOSE])


# --- Exclusions checked on the answer ------------------------------------------------------

_CARD = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_UK_NINO = re.compile(r"\b[A-CEGHJ-PR-TW-Z]{2} ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_ID_WORDS = re.compile(
    r"\b(?:passport|national\s+id|identity\s+(?:card|number)|id\s+(?:card|number|no)|"
    r"social\s+security|ssn|tax\s+(?:id|number)|nif|dni|nie|cpf|aadhaar|driv(?:er'?s|ing)\s+"
    r"licen[cs]e|personalausweis|reisepass|passaporte|pasaporte|passeport)\b",
    re.IGNORECASE,
)
_ID_TOKEN = re.compile(r"\b(?=[A-Z0-9-]*\d)[A-Z0-9][A-Z0-9-]{5,14}\b", re.IGNORECASE)
_SECRET_WORDS = re.compile(
    r"\b(?:password|passwd|passcode|passphrase|pin(?:\s+(?:code|number))?|recovery\s+code|"
    r"api\s+key|secret\s+key|access\s+token|senha|contraseña|contrasena|mot\s+de\s+passe|"
    r"passwort|kennwort)\b",
    re.IGNORECASE,
)
_SECRET_TOKEN = re.compile(r"(?<![\w@./])(?=\S*[A-Za-z])(?=\S*\d)(?=\S*[^\w\s])\S{8,64}")
_EMAIL_OR_URL = re.compile(r"@|://|^www\.", re.IGNORECASE)


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char)
        if i % 2:
            value *= 2
            value -= 9 if value > 9 else 0
        total += value
    return total % 10 == 0


def _iban_valid(text: str) -> bool:
    compact = text.replace(" ", "")
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(char, 36)) for char in rearranged)
    return len(compact) >= 15 and int(number) % 97 == 1


def _has_card(text: str) -> bool:
    return any(
        13 <= len(digits := re.sub(r"\D", "", match.group())) <= 19 and _luhn(digits)
        for match in _CARD.finditer(text)
    )


def _has_iban(text: str) -> bool:
    return any(_iban_valid(match.group()) for match in _IBAN.finditer(text))


def _has_government_id(text: str) -> bool:
    if _SSN.search(text) or _UK_NINO.search(text):
        return True
    return bool(_ID_WORDS.search(text) and _ID_TOKEN.search(text))


def _has_secret(text: str) -> bool:
    if _SECRET_WORDS.search(text) and re.search(r"\b(?:is|:|=|was)\s*\S+", text):
        return True
    return any(not _EMAIL_OR_URL.search(token.group()) for token in _SECRET_TOKEN.finditer(text))


_CHECKS = {
    "payment_cards": _has_card,
    "bank_accounts": _has_iban,
    "government_ids": _has_government_id,
    "passwords": _has_secret,
}


def excluded(*, key: str, value: str, category: str, exclude: frozenset[str]) -> str | None:
    """The excluded class a proposed memory falls in, as far as a pattern can tell (health:
    by its category alone); None when it may be kept."""
    text = f"{key}: {value}"
    for name in sorted(exclude):
        check = _CHECKS.get(name)
        if check is not None and check(text):
            return name
    if "health" in exclude and fold(category) in HEALTH_CATEGORIES:
        return "health"
    return None


def category_named(category: str, categories: Sequence[tuple[str, str]]) -> str | None:
    """The settings' category a proposed one names (case and accents aside), or None."""
    wanted = fold(category)
    return next((name for name, _ in categories if fold(name) == wanted), None)
