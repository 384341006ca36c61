"""Retention: memories that know when to go (SPEC.md section 15, docs/operations.md
"Retention"). A memory stops being current at the earlier of its own `expires_at` and the
time its tenant's retention rules give it (`retention_expires_at`: valid_from + the days of
the shortest rule matching it). Recall leaves an expired memory out at once; the sweep
(every RETENTION_SWEEP_INTERVAL_SECONDS) archives it with a revision naming the cause and a
memory.expired event. Nothing is deleted.

- expiry: the rules' conditions and the computed retention_expires_at
- rules: the rules of a tenant (reads and writes)
- sweep: the periodic archiving of expired memories"""
