"""The profile of an end user (SPEC 14, docs/api.md "Profile"): their pinned memories, their
current memories by category, their entities by relation, and a short summary written in the
background (profiles.writing, run by the periodic sweep in profiles.sweep).

- contents: what a profile holds, read from the user's current memories and entities
- summary: the summary's text, by a template or by the LLM
- writing: write a user's summary when what it reads has changed
- sweep: find the users whose memories or entities changed and write their summaries"""
