from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

LONE_SURROGATE = (
    "JSON parse error - the body holds a lone surrogate (an escape in \\ud800-\\udfff without "
    "its pair), which is not text."
)


def holds_lone_surrogate(data) -> bool:
    """Whether any string of parsed JSON (object keys included) holds a lone surrogate: JSON
    can spell one (\\ud800), but no text encoding can store or send it back."""
    pending = [data]
    while pending:  # a stack, not recursion: the JSON may be nested as deep as it parsed
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


class SafeJSONParser(JSONParser):
    """JSONParser that answers 400 for JSON nested too deeply to parse (RecursionError) and
    for strings no encoding can hold (lone surrogates), before any field sees them."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
        if holds_lone_surrogate(data):
            raise ParseError(LONE_SURROGATE)
        return data
