"""Roster CSV import of a 5 000-row file: parse, diff against the offering, apply in one transaction.

Run: .venv/bin/python -m bench.bench_roster_import [--rows N] [--database-url URL]
Prints its own baseline from the same run: the time to parse alone, and to re-import the same file (all rows
unchanged, nothing written).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from app.courses import roster
from app.courses import service as courses
from app.db import make_engine, make_session_factory
from app.migrate import upgrade


def make_csv(rows: int) -> bytes:
    lines = ["\ufeffemail,name,section,role,student_id"]
    lines += [f"student{i}@example.com,Student {i},S{i % 12},student,{100000 + i}" for i in range(rows)]
    return ("\r\n".join(lines) + "\r\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        upgrade(url)
        engine = make_engine(url)
        factory = make_session_factory(engine)
        data = make_csv(args.rows)
        with factory() as session:
            course = courses.create_course(session, slug=f"bench{int(time.time())}", title="Bench")
            offering = courses.create_offering(session, course=course, slug="o", title="O")
            session.commit()
            started = time.perf_counter()
            rows = roster.parse(data)
            parsed = time.perf_counter() - started
            started = time.perf_counter()
            result = roster.diff(session, offering, rows, drop_missing=True)
            roster.apply(session, offering, result)
            session.commit()
            first = time.perf_counter() - started
            started = time.perf_counter()
            again = roster.diff(session, offering, roster.parse(data), drop_missing=True)
            rerun = time.perf_counter() - started
        engine.dispose()
    print(f"rows: {args.rows} ({len(data) / 1024:.0f} KiB) on {url.split(':')[0]}")
    print(f"parse only (baseline):          {parsed * 1000:8.1f} ms")
    print(f"diff + apply, one transaction:  {first * 1000:8.1f} ms  ({len(result.added)} added)")
    print(f"re-import preview (unchanged):  {rerun * 1000:8.1f} ms  ({again.unchanged} unchanged)")


if __name__ == "__main__":
    main()
