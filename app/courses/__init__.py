"""Courses, offerings, memberships (rosters), assignments with attempt and release policies, and overrides."""
