"""Grading logic: importable and testable without app/, FastAPI or SQLAlchemy."""
