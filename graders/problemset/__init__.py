"""The problem-set format: problemset.yaml + prompts/ + checks/ + solutions/ + mutants/ (DESIGN.md)."""
