"""What an operator watches: health and readiness probes, Prometheus metrics, structured logs
with request ids (docs/operations.md)."""
