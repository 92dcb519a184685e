from __future__ import annotations

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.names import (
    PackageId,
    PackageRef,
    ToolRef,
    is_valid_name,
    is_valid_package_id,
    is_valid_tool_name,
)
from splice_build.spec.semver import RangeKind


@pytest.mark.parametrize(
    ("segment", "ok"),
    [
        ("a", True),
        ("splice", True),
        ("0x", True),
        ("get-repo", True),
        ("a-", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("", False),
        ("-a", False),
        ("Splice", False),
        ("a.b", False),
        ("a_b", False),
        ("a b", False),
        ("a\n", False),
        ("é", False),
        (1, False),
        (None, False),
    ],
)
def test_is_valid_name(segment: object, ok: bool) -> None:
    assert is_valid_name(segment) is ok


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("hello", True),
        ("get-repo", True),
        ("a1", True),
        ("1a", False),
        ("-a", False),
        ("Hello", False),
        ("a" * 65, False),
    ],
)
def test_is_valid_tool_name(name: str, ok: bool) -> None:
    assert is_valid_tool_name(name) is ok


def test_package_id_parse() -> None:
    pid = PackageId.parse("  @splice/example\t")
    assert (pid.namespace, pid.name, pid.id, str(pid)) == (
        "splice",
        "example",
        "@splice/example",
        "@splice/example",
    )
    assert pid == PackageId.from_parts("splice", "example")
    assert {pid, PackageId.parse("@splice/example")} == {pid}


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("example", "Expected @namespace/name"),
        ("@splice", "Expected @namespace/name"),
        ("@splice/", "Expected @namespace/name"),
        ("@/example", "Expected @namespace/name"),
        ("@splice/example/extra", "Expected @namespace/name"),
        ("@splice/exa mple", "Expected @namespace/name"),
        ("@splice/example@1.0.0", "Expected @namespace/name"),
        ("splice/example", "Expected @namespace/name"),
        ("@Splice/example", "lowercase letters, digits and dashes"),
        ("@splice/ex.ample", "lowercase letters, digits and dashes"),
        ("@splice/-x", "lowercase letters, digits and dashes"),
        ("@splice/" + "a" * 65, "lowercase letters, digits and dashes"),
    ],
)
def test_package_id_parse_invalid(text: str, fragment: str) -> None:
    with pytest.raises(SpecError) as info:
        PackageId.parse(text)
    assert info.value.code is ErrorCode.INVALID_NAME
    assert fragment in info.value.message and text in info.value.message


def test_package_id_constructor_checks_segments() -> None:
    with pytest.raises(SpecError) as info:
        PackageId.from_parts("splice", "Bad")
    assert info.value.code is ErrorCode.INVALID_NAME


def test_is_valid_package_id_is_strict() -> None:
    assert is_valid_package_id("@splice/example")
    assert not is_valid_package_id(" @splice/example")
    assert not is_valid_package_id("@splice/Example")
    assert not is_valid_package_id(["@splice/example"])


@pytest.mark.parametrize(
    ("text", "package", "rng", "kind"),
    [
        ("@splice/example", "@splice/example", "latest", RangeKind.LATEST),
        (" @splice/example ", "@splice/example", "latest", RangeKind.LATEST),
        ("@splice/example@^0.1.0", "@splice/example", "^0.1.0", RangeKind.CARET),
        ("@splice/example@~1.2.3", "@splice/example", "~1.2.3", RangeKind.TILDE),
        ("@splice/example@1.0.0-rc.1", "@splice/example", "1.0.0-rc.1", RangeKind.EXACT),
        ("@splice/example@*", "@splice/example", "*", RangeKind.ANY),
        ("@splice/example@latest", "@splice/example", "latest", RangeKind.LATEST),
    ],
)
def test_package_ref_parse(text: str, package: str, rng: str, kind: RangeKind) -> None:
    ref = PackageRef.parse(text)
    assert ref.package.id == package and str(ref.range) == rng and ref.range.kind is kind
    assert str(ref) == f"{package}@{rng}"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("example", ErrorCode.INVALID_NAME),
        ("@Splice/example", ErrorCode.INVALID_NAME),
        ("@splice/example@banana", ErrorCode.INVALID_RANGE),
        ("@splice/example@", ErrorCode.INVALID_RANGE),
        ("@splice/example@1.2", ErrorCode.INVALID_RANGE),
        ("@splice/example@^1.0.0@x", ErrorCode.INVALID_RANGE),
    ],
)
def test_package_ref_parse_invalid(text: str, code: ErrorCode) -> None:
    with pytest.raises(SpecError) as info:
        PackageRef.parse(text)
    assert info.value.code is code


def test_package_ref_range_message_names_the_input() -> None:
    with pytest.raises(
        SpecError, match=r'Invalid version range "banana" in "@splice/example@banana"'
    ):
        PackageRef.parse("@splice/example@banana")


@pytest.mark.parametrize(
    ("text", "package", "tool", "qualified"),
    [
        ("example.hello", "example", "hello", False),
        ("@splice/example.hello", "@splice/example", "hello", True),
        ("@splice/github.get-repo", "@splice/github", "get-repo", True),
        (" example.hello ", "example", "hello", False),
    ],
)
def test_tool_ref_parse(text: str, package: str, tool: str, qualified: bool) -> None:
    ref = ToolRef.parse(text)
    assert (ref.package, ref.tool, ref.qualified) == (package, tool, qualified)
    assert str(ref) == text.strip()
    assert ref.package_name == package.rsplit("/")[-1]
    if qualified:
        assert ref.package_id == PackageId.parse(package)
    else:
        assert ref.package_id is None


@pytest.mark.parametrize(
    "text",
    [
        "example",
        "example.",
        ".hello",
        "",
        "Example.hello",
        "example.Hello",
        "example.1hello",
        "exa mple.hello",
    ],
)
def test_tool_ref_parse_invalid(text: str) -> None:
    with pytest.raises(SpecError) as info:
        ToolRef.parse(text)
    assert info.value.code is ErrorCode.INVALID_REF


@pytest.mark.parametrize(
    "text",
    [
        "@Splice/example.hello",
        "@splice/ex.ample.hello",  # split at the last dot: package "@splice/ex.ample"
        "@splice.hello",
    ],
)
def test_tool_ref_with_a_malformed_qualified_package_is_invalid_name(text: str) -> None:
    """A package starting with ``@`` is parsed as a package id, as the TypeScript Splice does."""
    with pytest.raises(SpecError) as info:
        ToolRef.parse(text)
    assert info.value.code is ErrorCode.INVALID_NAME


def test_tool_ref_constructor_checks_parts() -> None:
    assert ToolRef("example", "hello").qualified is False
    with pytest.raises(SpecError):
        ToolRef("example", "Hello")
    with pytest.raises(SpecError):
        ToolRef("@splice/Example", "hello")
