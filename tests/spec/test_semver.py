from __future__ import annotations

import functools
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.semver import (
    Range,
    RangeKind,
    Version,
    is_valid_range,
    is_valid_version,
    latest_version,
    max_satisfying,
)

# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("0.0.0", (0, 0, 0, (), ())),
        ("1.2.3", (1, 2, 3, (), ())),
        ("10.20.30", (10, 20, 30, (), ())),
        ("1.0.0-alpha", (1, 0, 0, ("alpha",), ())),
        ("1.0.0-alpha.1", (1, 0, 0, ("alpha", 1), ())),
        ("1.0.0-0.3.7", (1, 0, 0, (0, 3, 7), ())),
        ("1.0.0-x.7.z.92", (1, 0, 0, ("x", 7, "z", 92), ())),
        ("1.0.0-x-y-z.--", (1, 0, 0, ("x-y-z", "--"), ())),
        ("1.0.0-0a", (1, 0, 0, ("0a",), ())),
        ("1.0.0+20130313144700", (1, 0, 0, (), ("20130313144700",))),
        ("1.0.0-beta+exp.sha.5114f85", (1, 0, 0, ("beta",), ("exp", "sha", "5114f85"))),
        ("1.0.0+21AF26D3----117B344092BD", (1, 0, 0, (), ("21AF26D3----117B344092BD",))),
        ("9007199254740991.0.0", (2**53 - 1, 0, 0, (), ())),
        ("1.0.0-" + "a" * 60, (1, 0, 0, ("a" * 60,), ())),  # no length limit outside manifests
        ("1.0.0-" + "9" * 5000, (1, 0, 0, ("9" * 5000,), ())),  # too long for int(): kept as text
    ],
)
def test_parse_valid(text: str, parts: tuple[object, ...]) -> None:
    v = Version.parse(text)
    assert (v.major, v.minor, v.patch, v.prerelease, v.build) == parts
    assert str(v) == text
    assert is_valid_version(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1",
        "1.2",
        "1.2.3.4",
        "v1.2.3",
        "01.2.3",
        "1.02.3",
        "1.2.03",
        "1.2.3-",
        "1.2.3-01",
        "1.2.3-a..b",
        "1.2.3+",
        "1.2.3+a..b",
        "1.2.3-a_b",
        " 1.2.3",
        "1.2.3 ",
        "1.2.3\n",
        "-1.2.3",
        "1.2.3-١",  # a non-ASCII digit
        "9007199254740992.0.0",  # beyond a JavaScript safe integer
        "1" * 5000 + ".0.0",
    ],
)
def test_parse_invalid(text: str) -> None:
    with pytest.raises(SpecError) as info:
        Version.parse(text)
    assert info.value.code is ErrorCode.INVALID_VERSION
    assert not is_valid_version(text)


def test_sixty_four_characters_is_the_limit() -> None:
    assert is_valid_version("1.0.0-" + "a" * 58)


def test_non_strings_are_not_versions() -> None:
    assert not is_valid_version(123)
    with pytest.raises(SpecError):
        Version.parse(None)  # type: ignore[arg-type]


# --- precedence ----------------------------------------------------------------------------

SEMVER_ORG_CHAIN = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "1.9.9",
    "1.10.0",
    "2.0.0",
    "2.1.0",
    "2.1.1",
]


@pytest.mark.parametrize(("lower", "higher"), list(itertools.pairwise(SEMVER_ORG_CHAIN)))
def test_semver_org_precedence_chain(lower: str, higher: str) -> None:
    a, b = Version.parse(lower), Version.parse(higher)
    assert a < b and a <= b and b > a and b >= a and a != b
    assert not (b < a)


def test_sorting_the_chain_restores_it() -> None:
    shuffled = list(reversed(SEMVER_ORG_CHAIN))
    assert [str(v) for v in sorted(map(Version.parse, shuffled))] == SEMVER_ORG_CHAIN


def test_build_metadata_is_ignored_by_comparison_but_printed() -> None:
    a, b = Version.parse("1.0.0+a"), Version.parse("1.0.0+b")
    assert a == b and hash(a) == hash(b) and not a < b and a <= b
    assert str(a) == "1.0.0+a"
    assert Version.parse("1.0.0-rc.1+x") < Version.parse("1.0.0")


def test_is_prerelease() -> None:
    assert Version.parse("1.0.0-0").is_prerelease
    assert not Version.parse("1.0.0+build").is_prerelease


def test_comparison_with_other_types() -> None:
    assert Version.parse("1.0.0") != "1.0.0"
    with pytest.raises(TypeError):
        _ = Version.parse("1.0.0") < "2.0.0"  # type: ignore[operator]


# --- ranges --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "exact"),
    [
        ("latest", RangeKind.LATEST, False),
        ("*", RangeKind.ANY, False),
        ("1.2.3", RangeKind.EXACT, True),
        ("1.0.0-beta.1", RangeKind.EXACT, True),
        ("^1.2.3", RangeKind.CARET, False),
        ("~1.2.3", RangeKind.TILDE, False),
        ("^0.0.1-rc.1", RangeKind.CARET, False),
    ],
)
def test_range_parse(text: str, kind: RangeKind, exact: bool) -> None:
    rng = Range.parse(text)
    assert rng.kind is kind and rng.is_exact is exact and str(rng) == text


@pytest.mark.parametrize(
    "text",
    [
        "",
        "^",
        "~",
        "1.2",
        "^1.2",
        ">=1.2.3",
        "1.x",
        "1.2.*",
        "^^1.2.3",
        "~^1.2.3",
        " 1.2.3",
        "Latest",
        "banana",
    ],
)
def test_range_parse_invalid(text: str) -> None:
    with pytest.raises(SpecError) as info:
        Range.parse(text)
    assert info.value.code is ErrorCode.INVALID_RANGE
    assert "^1.2.3, ~1.2.3, * or latest" in info.value.message
    assert not is_valid_range(text)


@pytest.mark.parametrize(
    ("rng", "version", "ok"),
    [
        # exact
        ("1.2.3", "1.2.3", True),
        ("1.2.3", "1.2.4", False),
        ("1.2.3", "1.2.3+build", True),
        ("1.0.0-beta.1", "1.0.0-beta.1", True),
        ("1.0.0-beta.1", "1.0.0-beta.2", False),
        # latest and * take stable versions only
        ("latest", "0.0.1", True),
        ("latest", "99.0.0", True),
        ("latest", "1.0.0-beta.1", False),
        ("*", "3.4.5", True),
        ("*", "3.4.5-rc.1", False),
        # caret, major > 0: same major
        ("^1.2.0", "1.4.0", True),
        ("^1.2.0", "1.2.0", True),
        ("^1.2.0", "1.1.9", False),
        ("^1.2.0", "2.0.0", False),
        ("^1.2.0", "1.9.0-beta", False),
        # caret, 0.minor > 0: same minor
        ("^0.1.0", "0.1.9", True),
        ("^0.1.2", "0.1.1", False),
        ("^0.1.0", "0.2.0", False),
        ("^0.1.0", "1.1.0", False),
        # caret, 0.0.patch: exactly that patch
        ("^0.0.1", "0.0.1", True),
        ("^0.0.1", "0.0.2", False),
        ("^0.0.1", "0.1.1", False),
        # caret with a prerelease base: the release qualifies, other prereleases do not
        ("^1.0.0-beta", "1.0.0", True),
        ("^1.0.0-beta", "1.0.0-beta.2", False),
        # tilde: same major.minor
        ("~1.2.3", "1.2.9", True),
        ("~1.2.3", "1.2.3", True),
        ("~1.2.3", "1.2.2", False),
        ("~1.2.3", "1.3.0", False),
        ("~0.0.3", "0.0.7", True),
        ("~1.2.3", "1.2.4-rc.1", False),
    ],
)
def test_satisfies(rng: str, version: str, ok: bool) -> None:
    assert Range.parse(rng).satisfies(Version.parse(version)) is ok


def test_max_satisfying() -> None:
    versions = ["0.1.0", "0.1.2", "0.2.0", "1.0.0-rc.1", "not-a-version"]
    assert str(max_satisfying(versions, Range.parse("^0.1.0"))) == "0.1.2"
    assert str(max_satisfying(versions, Range.parse("latest"))) == "0.2.0"
    assert str(max_satisfying(versions, Range.parse("*"))) == "0.2.0"
    assert max_satisfying(versions, Range.parse("^3.0.0")) is None
    assert str(max_satisfying(versions, Range.parse("1.0.0-rc.1"))) == "1.0.0-rc.1"
    assert max_satisfying([], Range.parse("latest")) is None
    mixed = [Version.parse("2.0.0"), "2.1.0", Version.parse("3.0.0-beta")]
    assert str(max_satisfying(mixed, Range.parse("^2.0.0"))) == "2.1.0"


def test_max_satisfying_keeps_the_first_of_equal_versions() -> None:
    best = max_satisfying(["1.0.0+first", "1.0.0+second"], Range.parse("*"))
    assert best is not None and best.build == ("first",)


def test_latest_version() -> None:
    assert str(latest_version(["0.1.0", "0.1.2", "0.2.0", "1.0.0-rc.1"])) == "0.2.0"
    assert str(latest_version(["1.0.0-rc.1", "1.0.0-rc.2", "1.0.0-rc.10"])) == "1.0.0-rc.10"
    assert latest_version([]) is None
    assert latest_version(["junk", "1.2"]) is None
    assert str(latest_version(["junk", Version.parse("0.0.1")])) == "0.0.1"


# --- properties ----------------------------------------------------------------------------

_numbers = st.integers(min_value=0, max_value=2**53 - 1)
_alnum = st.text(alphabet="abcXYZ-019", min_size=1, max_size=6).filter(lambda s: not s.isdigit())
_numeric = st.integers(min_value=0, max_value=10**6)
_prerelease = st.lists(st.one_of(_alnum, _numeric), max_size=4)
_build = st.lists(st.text(alphabet="abc-019", min_size=1, max_size=5), max_size=3)


@st.composite
def versions(draw: st.DrawFn, numbers: st.SearchStrategy[int] = _numbers) -> str:
    text = ".".join(str(draw(numbers)) for _ in range(3))
    pre = draw(_prerelease)
    if pre:
        text += "-" + ".".join(map(str, pre))
    build = draw(_build)
    if build:
        text += "+" + ".".join(build)
    return text


def _reference_compare(a: str, b: str) -> int:
    """semver.org section 11, written independently of the implementation under test."""

    def split(text: str) -> tuple[list[int], list[str]]:
        core, _, pre = text.split("+")[0].partition("-")
        return [int(p) for p in core.split(".")], (pre.split(".") if pre else [])

    (core_a, pre_a), (core_b, pre_b) = split(a), split(b)
    if core_a != core_b:
        return -1 if core_a < core_b else 1
    if not pre_a or not pre_b:
        return (not pre_a) - (not pre_b)
    for x, y in zip(pre_a, pre_b, strict=False):
        if x == y:
            continue
        if x.isdigit() and y.isdigit():
            return -1 if int(x) < int(y) else 1
        if x.isdigit() != y.isdigit():
            return -1 if x.isdigit() else 1
        return -1 if x < y else 1
    return (len(pre_a) > len(pre_b)) - (len(pre_a) < len(pre_b))


@given(versions())
def test_round_trip(text: str) -> None:
    assert str(Version.parse(text)) == text


@given(st.lists(versions(), min_size=2, max_size=6))
def test_ordering_matches_the_reference(texts: list[str]) -> None:
    parsed = [Version.parse(t) for t in texts]
    for a, va in zip(texts, parsed, strict=True):
        for b, vb in zip(texts, parsed, strict=True):
            expected = _reference_compare(a, b)
            assert (va < vb, va == vb, va > vb) == (expected < 0, expected == 0, expected > 0)
    by_reference = sorted(texts, key=functools.cmp_to_key(_reference_compare))
    assert [str(v) for v in sorted(parsed)] == [str(Version.parse(t)) for t in by_reference]


@given(versions())
def test_star_and_exact_agree_with_definitions(text: str) -> None:
    v = Version.parse(text)
    assert Range.parse("*").satisfies(v) is (not v.is_prerelease)
    exact = f"{v.major}.{v.minor}.{v.patch}" + (
        "-" + ".".join(map(str, v.prerelease)) if v.prerelease else ""
    )
    assert Range.parse(exact).satisfies(v)


_small = versions(st.integers(min_value=0, max_value=2))


@given(_small, _small)
def test_caret_and_tilde_follow_their_definitions(base_text: str, other_text: str) -> None:
    base, v = Version.parse(base_text), Version.parse(other_text)
    allowed = not v.is_prerelease and v >= base
    tilde = allowed and (v.major, v.minor) == (base.major, base.minor)
    if base.major:
        caret = allowed and v.major == base.major
    elif base.minor:
        caret = allowed and (v.major, v.minor) == (0, base.minor)
    else:
        caret = allowed and (v.major, v.minor, v.patch) == (0, 0, base.patch)
    assert Range.parse("~" + base_text).satisfies(v) is tilde
    assert Range.parse("^" + base_text).satisfies(v) is caret
