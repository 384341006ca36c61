"""What recall reads of a query.

A product passes the user's whole message as the context query, and the question is usually
at its end. Recall reads the last RECALL_QUERY_READ_CHARS characters, starting at a word, for
both halves: a long text's vector is its start (a model that truncates) or the mean of all
of it, so the start of a long message would crowd the question out of the vector; and a query
of hundreds of words makes the keyword half weigh words the question is not about (its
evidence is the share of the query's word weight a memory matched) and look up many more."""

import re

from django.conf import settings

# A cut in the middle of a word drops the word's rest, looking this far for the next space.
# Scripts written without spaces (Chinese, Japanese, Thai) have no word to finish: there the
# cut stays where it fell.
WORD_MAX_CHARS = 40
_SPACE = re.compile(r"\s")


def query_for_recall(query: str, *, limit: int | None = None) -> str:
    """The part of `query` recall reads: all of it when short, else its last `limit`
    characters (RECALL_QUERY_READ_CHARS) starting at a word."""
    limit = settings.RECALL_QUERY_READ_CHARS if limit is None else limit
    text = query.strip()
    if len(text) <= limit:
        return text
    tail = text[-limit:]
    if not text[-limit - 1].isspace():
        space = _SPACE.search(tail, 0, WORD_MAX_CHARS)
        if space is not None:
            tail = tail[space.end() :]
    return tail.strip()
