"""Metadata and filters (issue 46, SPEC.md section 16): the language (language.py), its SQL
(compile.py), and the product's own fields on a memory (metadata.py)."""
