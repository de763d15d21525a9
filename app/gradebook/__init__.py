"""Gradebook: best scores per student and problem, CSV export, statistics, regrades and manual grades."""
