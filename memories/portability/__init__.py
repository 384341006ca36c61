"""A user's data in and out: `exporting` writes every memory of a user as NDJSON,
`ndjson` reads such a body as a stream of lines, and `importing` writes them back,
idempotently, into the same or another account."""
