"""The AI tools memory_save and memory_recall (SPEC §6), in the function-calling format that
OpenAI-compatible chat APIs accept."""

from django.conf import settings

TOOL_DEFINITIONS = [
    {
        "type": "function",
        "function": {
            "name": "memory_save",
            "description": (
                "Save a lasting fact about the user (a preference, a personal detail, a "
                "decision) so it can be recalled in later conversations. Use a short key and "
                "state the fact in the value."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "key": {
                        "type": "string",
                        "description": "Short label, e.g. 'preferred language'.",
                        "maxLength": settings.MEMORY_KEY_MAX_LENGTH,
                    },
                    "value": {
                        "type": "string",
                        "description": "The fact itself, e.g. 'Go with Gin for backend services'.",
                        "maxLength": settings.MEMORY_VALUE_MAX_LENGTH,
                    },
                    "confidence": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "How sure you are that the fact is true and lasting.",
                    },
                    "category": {
                        "type": "string",
                        "description": "Optional label such as 'preference' or 'personal'.",
                        "maxLength": settings.MEMORY_CATEGORY_MAX_LENGTH,
                    },
                    "importance": {
                        "type": "number",
                        "minimum": 0,
                        "maximum": 1,
                        "description": "How much the fact matters for future answers.",
                    },
                    "scope": {
                        "type": "string",
                        "enum": ["user", "project", "persona_user"],
                        "description": (
                            "user: about the user everywhere (default); project: only within "
                            "the current project; persona_user: only with the current persona."
                        ),
                    },
                },
                "required": ["key", "value", "confidence"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "memory_recall",
            "description": (
                "Search what is remembered about the user. Returns the most relevant "
                "memories, best first."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What to look for, in natural language.",
                        "maxLength": 1000,
                    },
                    "top_k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": 50,
                        "description": "How many memories to return (default 5).",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
]

TOOL_NAMES = {tool["function"]["name"] for tool in TOOL_DEFINITIONS}
