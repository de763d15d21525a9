"""Prometheus metrics: what the process records (registry.py), what the database says at scrape time
(queue.py), and the protected /metrics endpoint
(app/api/metrics.py)."""
