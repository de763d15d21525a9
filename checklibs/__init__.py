"""Check libraries: course code that a problem set's ``checks/*.py`` compose their checks from.

One package per library (``checklibs.attention``: the chapter-9 attention checks). A library is course content, not
the engine: it uses the engine only through ``graders.code.check_api`` (import-linter contract
``checklibs-use-the-check-api``), and ``graders`` never imports it (``graders-never-import-checklibs``). It is
importable where a set's checks run, in the set's jailed checker (graders/sandbox/jail.py binds this folder there),
and never in the student's child. docs/check-authoring.md describes the API and how to add a library.
"""
