"""Grading dispatch: embedded worker threads (default) or Celery workers (with a broker). Never request handlers."""
