"""The conformance index (statements.toml) is complete, points at real tests, and
docs/conformance.md is generated from it. Test files are parsed, not imported: fast."""

from __future__ import annotations

import ast
import re
from functools import cache

import pytest

from tests.conformance.render import (
    DATA,
    DOC,
    DOCUMENTS,
    REPO,
    STATUSES,
    Statement,
    load,
    raw_statements,
    render,
)

FIELDS = {"id", "document", "section", "quote", "status", "tests"}
NODE_ID = re.compile(r"(tests/(?:[a-z0-9_]+/)*test_[a-z0-9_]+\.py)::((?:Test\w+::)?test\w*)")


@cache
def _tests_in(relative: str) -> frozenset[str]:
    """``name`` and ``Class::name`` of every test function a file defines at top level."""
    tree = ast.parse((REPO / relative).read_text(encoding="utf-8"), filename=relative)
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names |= {
                f"{node.name}::{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
    return frozenset(name for name in names if name.rsplit("::", 1)[-1].startswith("test"))


def test_node_id_problem_finds_what_is_wrong() -> None:
    """The checker itself: each kind of bad reference is reported, a good one is not."""
    good = "tests/conformance/test_index.py::test_node_id_problem_finds_what_is_wrong"
    assert node_id_problem(good) is None
    for bad, why in [
        (good + "[x]", "not a pytest node id"),
        ("tests/conformance/test_index.py::nothing_here", "not a pytest node id"),
        ("tests/conformance/test_missing_file.py::test_x", "no such file"),
        ("tests/conformance/test_index.py::test_not_defined", "no test function"),
        ("tests/conformance/test_index.py::TestNone::test_x", "no test function"),
        ("tests/../pyproject.py::test_x", "not a pytest node id"),
        ("testing/netns.py::test_x", "not a pytest node id"),
    ]:
        problem = node_id_problem(bad)
        assert problem is not None and why in problem, (bad, problem)


def node_id_problem(node_id: str) -> str | None:
    match = NODE_ID.fullmatch(node_id)
    if match is None:
        return f"{node_id}: not a pytest node id (tests/…/test_x.py::test_y, no [params])"
    path, name = match.groups()
    if not (REPO / path).is_file():
        return f"{node_id}: no such file"
    if name not in _tests_in(path):
        return f"{node_id}: no test function {name} in {path}"
    return None


def test_every_statement_has_exactly_the_known_fields() -> None:
    problems = []
    for number, item in enumerate(raw_statements(), 1):
        where = item.get("id", f"statement #{number}")
        fields = set(item)
        if not fields >= FIELDS or fields - FIELDS - {"note"}:
            problems.append(f"{where}: fields {sorted(fields)}")
            continue
        text_fields = ("id", "document", "section", "quote", "status", "note")
        if not all(isinstance(item.get(k, ""), str) for k in text_fields):
            problems.append(f"{where}: every field but tests is a string")
        if not isinstance(item["tests"], list) or not all(
            isinstance(t, str) for t in item["tests"]
        ):
            problems.append(f"{where}: tests is a list of strings")
        if not item["quote"].strip() or not item["section"].strip():
            problems.append(f"{where}: empty quote or section")
    assert problems == []


@pytest.fixture(scope="module")
def statements() -> list[Statement]:
    return load()


def test_ids_are_unique_ordered_and_name_their_document(statements: list[Statement]) -> None:
    ids = [s.id for s in statements]
    assert [i for i in ids if ids.count(i) > 1] == []
    assert ids == sorted(ids)
    for s in statements:
        assert s.document in DOCUMENTS, s.id
        prefix = DOCUMENTS[s.document][0]
        assert re.fullmatch(rf"{prefix}-\d{{2,3}}", s.id), (s.id, s.document)


def test_every_statement_has_a_status_and_a_reason_when_it_is_not_plainly_implemented(
    statements: list[Statement],
) -> None:
    for s in statements:
        assert s.status in STATUSES, s.id
        if s.status != "implemented":
            assert s.note.strip(), f"{s.id}: a {s.status} statement needs a note (the reason)"
        if s.status == "partial":
            assert s.note.startswith("Missing: "), f"{s.id}: say what is missing"


def test_every_statement_has_a_test(statements: list[Statement]) -> None:
    """Only a not-applicable statement has none (and then it has none at all)."""
    for s in statements:
        if s.status == "not-applicable":
            assert s.tests == (), f"{s.id}: a test checks it, so it applies"
        else:
            assert s.tests, f"{s.id}: no test"
            assert len(set(s.tests)) == len(s.tests), f"{s.id}: a test is named twice"


# Calls that read our own code instead of running it: ``inspect.getsource(module)``,
# ``ast.parse(source)``. A test made of them shows what the code says, not what it does.
_READS_CODE = {("inspect", "getsource"), ("inspect", "getsourcelines"), ("ast", "parse")}


@cache
def _reads_code(node_id: str) -> bool:
    """Whether the named test function (or ``Class::method``) calls one of ``_READS_CODE``."""
    path, name = node_id.split("::", 1)
    node: ast.AST = ast.parse((REPO / path).read_text(encoding="utf-8"), filename=path)
    for part in name.split("::"):
        node = next(
            item
            for item in getattr(node, "body", [])
            if isinstance(item, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and item.name == part
        )
    return any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and (call.func.value.id, call.func.attr) in _READS_CODE
        for call in ast.walk(node)
    )


def test_reads_code_tells_a_code_reading_test_from_one_that_runs_the_code() -> None:
    hosts = "tests/broker/test_provider_hosts.py"
    assert _reads_code(f"{hosts}::test_github_provider_code_has_only_get_requests")
    assert not _reads_code(f"{hosts}::test_every_github_capability_sends_only_get")
    # Reading source through a helper (node_id_problem parses test files) is not this test's
    # own evidence: only calls in the test's body count.
    assert not _reads_code("tests/conformance/test_index.py::test_every_named_test_exists")


def test_no_statement_rests_on_code_evidence_alone(statements: list[Statement]) -> None:
    """A test that only reads the source may back a statement, next to one that exercises the
    behaviour (real servers, a real sandbox); never alone."""
    only_code = [s.id for s in statements if s.tests and all(_reads_code(test) for test in s.tests)]
    assert only_code == [], f"backed only by tests that read source code: {only_code}"


def test_every_named_test_exists(statements: list[Statement]) -> None:
    problems = [
        f"{s.id}: {problem}"
        for s in statements
        for test in s.tests
        if (problem := node_id_problem(test)) is not None
    ]
    assert problems == []


def test_the_index_names_no_source_outside_the_repository() -> None:
    text = DATA.read_text(encoding="utf-8")
    for pattern in (r"\b[0-9a-f]{16}\b", r"/work/", r"\bseeds?\b", r"\.txt\b", r"\bshared/"):
        assert re.search(pattern, text) is None, pattern


def test_docs_are_generated_from_the_data(statements: list[Statement]) -> None:
    assert DOC.read_text(encoding="utf-8") == render(statements), (
        "docs/conformance.md is out of date: run python -m tests.conformance.render"
    )
