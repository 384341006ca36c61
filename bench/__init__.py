"""Benchmarks of the memory service: recall quality on LOCOMO dev and search latency.

Run with `python -m bench run --data PATH/locomo-dev.json`; see bench/README.md.
"""
