"""The README is the front door and docs/ the reference: every relative link in them reaches a file that exists
(and, with `#anchor`, a heading of it, as GitHub names headings), every `make` target the README names is one of
the Makefile's, and every document in docs/ is linked from the README."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [README, *DOCS]

FENCE = re.compile(r"^(```|~~~)")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks (a `#` or `[x](y)` inside a code block is code, not Markdown)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of a page: lower case, punctuation dropped, spaces as hyphens, a repeated
    heading numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for line in prose(page.read_text(encoding="utf-8")):
        heading = re.match(r"^#{1,6} (.+?)\s*#*$", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links(page: Path) -> list[str]:
    """The relative link targets of a page: web addresses and mail links are left out."""
    found = []
    for line in prose(page.read_text(encoding="utf-8")):
        line = re.sub(r"`[^`]*`", "", line)  # a link written inside inline code is an example, not a link
        found += [t for t in LINK.findall(line) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_reaches_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / unquote(path)).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor in {dest.relative_to(REPO)}")
    assert not broken, broken


def test_every_document_is_linked_from_the_readme() -> None:
    linked = {(REPO / t.partition("#")[0]).resolve() for t in links(README) if t.partition("#")[0]}
    missing = [str(doc.relative_to(REPO)) for doc in DOCS if doc.resolve() not in linked]
    assert not missing, f"documents the README does not link: {missing}"


def make_targets() -> set[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return {name for line in re.findall(r"^([A-Za-z0-9_.-][^:=\n]*):(?!=)", text, flags=re.M) for name in line.split()}


def named_make_targets(text: str) -> set[str]:
    """`make X` where the README writes it as a command: in inline code, or at the start of a line of a code block."""
    commands = re.findall(r"`(make [^`]*)`", text)
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif fenced:
            commands += re.findall(r"(?:^|[;&|]\s*)(make [^;&|#]*)", line.strip())
    targets = set()
    for command in commands:
        words = command.split()[1:]
        targets |= {w for w in words if not w.startswith("-") and "=" not in w and not w.startswith(("'", '"'))}
    return targets


def test_every_make_target_the_readme_names_exists() -> None:
    named = named_make_targets(README.read_text(encoding="utf-8"))
    assert {"serve", "test"} <= named, named
    missing = named - make_targets()
    assert not missing, f"`make` targets the README names that the Makefile lacks: {missing}"


def test_the_readme_stays_a_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    assert "make test" in text and "make serve" in text
    assert "First start: created these accounts" in text  # what the first start shows
    assert re.search(r"\d+ min", text[text.index("make test") :])  # how long the suite takes


def test_the_checks_catch_what_they_are_for(tmp_path: Path) -> None:
    # A link to a missing file or heading, and a target the Makefile lacks, are each found.
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n## A b (c)\n\n[x](page.md#a-b-c) [y](gone.md) [z](#nowhere)\n```\n[w](in-code.md)\n```\n")
    assert anchors(page) == {"top", "a-b-c"}
    assert links(page) == ["page.md#a-b-c", "gone.md", "#nowhere"]
    assert named_make_targets("run `make serve`, then\n```sh\nmake pytest PYTEST_ARGS=-x; make bogus\n```\n") == {
        "serve",
        "pytest",
        "bogus",
    }
    assert "bogus" not in make_targets() and {"serve", "test", "pytest", "bench", "i18n"} <= make_targets()
