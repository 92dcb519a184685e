"""docs/conformance.md, generated from tests/conformance/statements.toml.

    python -m tests.conformance.render          # rewrite docs/conformance.md
    python -m tests.conformance.render --check  # exit 1 when it is out of date

tests/conformance/test_index.py runs the same comparison, and checks the data itself.
"""

from __future__ import annotations

import sys
import tomllib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).with_name("statements.toml")
DOC = REPO / "docs" / "conformance.md"

# document → (id prefix, title); the order of the sections in the page.
DOCUMENTS = {
    "security-model": ("S000", "Security model, boundaries and limits"),
    "permissions": ("S001", "Permissions"),
    "runtime": ("S002", "Runtime and permissions"),
    "files-skill": ("S004", "The @splice/files skill"),
}
STATUSES = ("implemented", "partial", "extension", "not-applicable")


@dataclass(frozen=True)
class Statement:
    id: str
    document: str
    section: str
    quote: str
    status: str
    tests: tuple[str, ...]
    note: str = ""


def raw_statements(path: Path = DATA) -> list[dict[str, Any]]:
    """The ``[[statement]]`` tables as parsed, for the index test's shape checks."""
    with path.open("rb") as handle:
        return list(tomllib.load(handle).get("statement", []))


def load(path: Path = DATA) -> list[Statement]:
    return [
        Statement(
            id=item["id"],
            document=item["document"],
            section=item["section"],
            quote=item["quote"],
            status=item["status"],
            tests=tuple(item["tests"]),
            note=item.get("note", ""),
        )
        for item in raw_statements(path)
    ]


_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "*": "\\*",
        "_": "\\_",
        "`": "\\`",
        "[": "\\[",
        "]": "\\]",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
    }
)


def _text(value: str) -> str:
    """Plain text for a table cell: nothing in it is read as Markdown or HTML."""
    return value.translate(_ESCAPES)


def _tests(tests: Sequence[str]) -> str:
    return "<br>".join(f"`{test}`" for test in tests) or "—"


def _summary(statements: Sequence[Statement]) -> list[str]:
    by_status = Counter(s.status for s in statements)
    lines = [
        "| Document | " + " | ".join(STATUSES) + " | total |",
        "| --- |" + " ---: |" * (len(STATUSES) + 1),
    ]
    for document, (prefix, title) in DOCUMENTS.items():
        counts = Counter(s.status for s in statements if s.document == document)
        cells = " | ".join(str(counts[status]) for status in STATUSES)
        lines.append(f"| {prefix} {title} | {cells} | {sum(counts.values())} |")
    cells = " | ".join(f"**{by_status[status]}**" for status in STATUSES)
    lines.append(f"| **all** | {cells} | **{len(statements)}** |")
    return lines


INTRO = """\
# Conformance

Splice follows a written specification in four parts, shared with the TypeScript Splice: the
security model, the permission rules, the runtime, and the `@splice/files` skill. This page
lists every normative statement of it, quoted briefly, with the tests that check it.
A statement is listed with a test only when that test would **fail** if the statement were
violated (most attack the rule for real: a malicious package, a hostile server, a redirect
to another host). The data lives in `tests/conformance/statements.toml`; this page is
generated from it (`python -m tests.conformance.render`) and
`tests/conformance/test_index.py` fails when the two differ, when a statement has no test,
when a named test file or test function does not exist, when an id repeats, or when every
test of a statement only reads the source code (`inspect.getsource`, `ast.parse`): such a
test may back a statement next to one that exercises the behaviour, never alone.

Statuses:

- **implemented** — the statement holds as written.
- **partial** — it holds only in part; the note names what is missing.
- **extension** — Splice deliberately goes further or changes it (publisher signatures, the
  OS isolation layer, memory caps, the warm pool, …); the note gives the reason, the tests
  check what Splice does instead.
- **not-applicable** — it cannot apply to this implementation (Windows-only tooling); the
  note says why. Only these may have no test.

Test ids are pytest node ids (`path::function` or `path::Class::method`); a parametrized
test is named without its `[...]` part and covers every case.
"""


def render(statements: Sequence[Statement]) -> str:
    out = [INTRO, "## Summary", "", *_summary(statements), ""]
    for document, (prefix, title) in DOCUMENTS.items():
        out += [f"## {prefix} — {title}", ""]
        out += ["| Id | Statement | Status | Tests | Note |", "| --- | --- | --- | --- | --- |"]
        for s in statements:
            if s.document != document:
                continue
            statement = f"*{_text(s.section)}:* {_text(s.quote)}"
            out.append(
                f"| {s.id} | {statement} | {s.status} | {_tests(s.tests)} | {_text(s.note)} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str]) -> int:
    text = render(load())
    if list(argv) == ["--check"]:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print(f"{DOC.relative_to(REPO)} is out of date: run python -m tests.conformance.render")
            return 1
        return 0
    if argv:
        print(__doc__)
        return 2
    DOC.write_text(text, encoding="utf-8")
    counts = Counter(s.status for s in load())
    print(f"wrote {DOC.relative_to(REPO)}: " + ", ".join(f"{counts[k]} {k}" for k in STATUSES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
