"""Every relative link and #anchor of README.md and docs/*.md resolves: the file exists, and an
anchor names a heading of the page it points to as GitHub spells it (lower case, punctuation
other than '-' and '_' dropped, spaces as '-', a repeated heading numbered -1, -2 ...); and so
does every `docs/page.md#anchor` the code, the tests and the benchmarks name."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text without code blocks and code spans (a link shown as code is no link)."""
    return _CODE.sub("", _FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives the page's headings."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", page.read_text(encoding="utf-8"))):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(pages: list[Path], root: Path = REPO) -> list[str]:
    """Each relative link of the pages whose file or anchor does not exist, as 'page: target'
    (the page relative to root)."""
    cache: dict[Path, set[str]] = {}
    broken = []
    for page in pages:
        for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue  # https:, mailto: ... are not the repository's
            path_part, _, anchor = target.partition("#")
            dest = (page.parent / path_part).resolve() if path_part else page
            if not dest.exists():
                broken.append(f"{page.relative_to(root)}: {target}")
                continue
            if anchor and dest.suffix == ".md" and dest not in cache:
                cache[dest] = anchors(dest)
            if anchor and dest.suffix == ".md" and anchor not in cache[dest]:
                broken.append(f"{page.relative_to(root)}: {target}")
    return broken


def test_every_relative_link_and_anchor_of_the_docs_resolves() -> None:
    assert len(PAGES) > 10
    assert broken_links(PAGES) == []


def test_a_broken_file_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text(
        "# Title\n\n## A `code` heading, twice\n\n## A `code` heading, twice\n"
    )
    page = tmp_path / "a.md"
    page.write_text(
        "[ok](b.md#a-code-heading-twice) [ok](b.md#a-code-heading-twice-1) [ok](#here)\n"
        "[gone](c.md) [no anchor](b.md#nope) [self](#nowhere) `[code](c.md)`\n"
        "```\n[fenced](c.md)\n```\n# Here\n"
    )
    assert broken_links([page], tmp_path) == ["a.md: c.md", "a.md: b.md#nope", "a.md: #nowhere"]


_SOURCE_LINK = re.compile(r"\b((?:docs|bench|fuzz)/[\w-]+\.md)(?:#([\w-]+))?")


def broken_source_links(files: list[Path], root: Path = REPO, *, pages: bool = True) -> list[str]:
    """Each `docs/page.md#anchor` (or `bench/README.md`, `fuzz/README.md`) a source file names
    whose heading does not exist, as 'file: target'; with ``pages`` a page that does not exist
    too (off for tests, whose data names pages of their own making)."""
    cache: dict[Path, set[str]] = {}
    broken = []
    for file in files:
        for page, anchor in _SOURCE_LINK.findall(file.read_text(encoding="utf-8")):
            dest = root / page
            if not dest.exists():
                if pages:
                    broken.append(f"{file.relative_to(root)}: {page}")
                continue
            if anchor and dest not in cache:
                cache[dest] = anchors(dest)
            if anchor and anchor not in cache[dest]:
                broken.append(f"{file.relative_to(root)}: {page}#{anchor}")
    return broken


def _sources(*tops: str) -> list[Path]:
    return [
        path
        for top in tops
        for path in sorted((REPO / top).rglob("*"))
        if path.suffix in (".py", ".mjs") and path.name != "bundle.mjs"
    ]


def test_every_page_and_anchor_the_code_names_exists() -> None:
    """Comments, docstrings and messages point readers at docs/ (a hint's 'See
    docs/registry.md#deadlines.'): a heading renamed there must not leave them pointing at
    nothing."""
    code = [REPO / "dodo.py", *_sources("splice_build", "testing", "bench", "fuzz")]
    tests = _sources("tests")
    assert len(code) > 300 and len(tests) > 300
    assert broken_source_links(code) == []
    assert broken_source_links(tests, pages=False) == []


def test_a_broken_page_or_anchor_in_the_code_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Title\n\n## A heading\n")
    source = tmp_path / "a.py"
    source.write_text(
        '"""See docs/b.md#a-heading, docs/b.md and docs/b.md#gone; docs/c.md too."""\n'
    )
    assert broken_source_links([source], tmp_path) == ["a.py: docs/b.md#gone", "a.py: docs/c.md"]
    assert broken_source_links([source], tmp_path, pages=False) == ["a.py: docs/b.md#gone"]
