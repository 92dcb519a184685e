from __future__ import annotations

import json

import pytest

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_FILES, MAX_SKILL_MD_BYTES
from splice_build.spec.package import validate_package_files, validate_skill_md
from testing.manifests import manifest_dict, package_files, tool_dict


def problems_of(files: dict[str, bytes]) -> list[str]:
    with pytest.raises(SpecError) as info:
        validate_package_files(files)
    assert info.value.code is ErrorCode.INVALID_PACKAGE
    assert info.value.message == "Package is invalid"
    return list(info.value.details)


def test_valid_package_returns_its_manifest() -> None:
    manifest = validate_package_files(
        package_files(extra={"lib/util.ts": b"export {}", "examples/a.json": b"{}"})
    )
    assert manifest.id == "@splice/example" and manifest.tools[0].entry == "tools/hello.ts"


def test_manifest_with_bom_and_agent_without_tools() -> None:
    files = package_files(manifest_dict(tools=[], agent={"instructions": "x", "skills": []}))
    files["manifest.json"] = b"\xef\xbb\xbf" + files["manifest.json"]
    assert validate_package_files(files).tools == ()


@pytest.mark.parametrize(
    ("data", "errors"),
    [
        (b"# Doc\n", []),
        ("# Dokumentation für Menschen\n".encode(), []),
        (b"x" * MAX_SKILL_MD_BYTES, []),
        (b"x" * (MAX_SKILL_MD_BYTES + 1), ["SKILL.md exceeds 262144 bytes"]),
        (b"", ["SKILL.md is empty"]),
        (b" \n\t\r\n", ["SKILL.md is empty"]),
        ("\ufeff \u3000\n".encode(), ["SKILL.md is empty"]),
        (b"# Doc\x00", ["SKILL.md must be text (contains NUL bytes)"]),
        (b"# Doc \xff\xfe", ["SKILL.md is not valid UTF-8"]),
        (b"\xed\xa0\x80", ["SKILL.md is not valid UTF-8"]),  # an encoded surrogate
    ],
)
def test_validate_skill_md(data: bytes, errors: list[str]) -> None:
    assert validate_skill_md(data) == errors


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda f: f.pop("manifest.json"), ["manifest.json is missing"]),
        (lambda f: f.update({"manifest.json": b"{nope"}), ["manifest.json is not valid JSON: "]),
        (
            lambda f: f.update({"manifest.json": b'{"a": "\xff"}'}),
            ["manifest.json is not valid UTF-8"],
        ),
        (lambda f: f.update({"manifest.json": b"[]"}), ["manifest: must be a JSON object"]),
        (lambda f: f.pop("SKILL.md"), ["SKILL.md is missing"]),
        (lambda f: f.update({"SKILL.md": b"  "}), ["SKILL.md is empty"]),
        (lambda f: f.update({"skill.md": f.pop("SKILL.md")}), ["SKILL.md is missing"]),
        (
            lambda f: f.pop("tools/hello.ts"),
            ['tool "hello": entry file "tools/hello.ts" is missing'],
        ),
        (
            lambda f: f.update({".env": b"TOKEN=x"}),
            ['disallowed file ".env": hidden files and node_modules are not allowed in packages'],
        ),
        (
            lambda f: f.update({"lib/.git/config": b"x"}),
            [
                'disallowed file "lib/.git/config": hidden files and node_modules are not allowed in packages'
            ],
        ),
        (
            lambda f: f.update({"node_modules/x/index.js": b"x"}),
            [
                'disallowed file "node_modules/x/index.js": hidden files and node_modules are not allowed in packages'
            ],
        ),
        (
            lambda f: f.update({"lib/node_modules": b"x"}),
            [
                'disallowed file "lib/node_modules": hidden files and node_modules are not allowed in packages'
            ],
        ),
        (
            lambda f: f.update({"big.bin": b"\0" * (MAX_FILE_BYTES + 1)}),
            ['file "big.bin" exceeds 2097152 bytes'],
        ),
        (lambda f: f.update({"../escape.js": b"x"}), ['unsafe file path "../escape.js"']),
        (lambda f: f.update({"/etc/passwd": b"x"}), ['unsafe file path "/etc/passwd"']),
        (lambda f: f.update({"a//b.js": b"x"}), ['unsafe file path "a//b.js"']),
        (lambda f: f.update({"a\\b.js": b"x"}), ['unsafe file path "a\\b.js"']),
        (lambda f: f.update({".": b"x"}), ['unsafe file path "."']),
        (lambda f: f.update({"C:evil.js": b"x"}), ['unsafe file path "C:evil.js"']),
        (
            lambda f: f.update({"Tools/Hello.ts": b"x"}),
            [
                'duplicate file path "tools/hello.ts": same path as "Tools/Hello.ts" ignoring case'
                " and Unicode normalization"
            ],
        ),
        (
            lambda f: f.update({"caf\u00e9.js": b"nfc", "cafe\u0301.js": b"nfd"}),
            ['duplicate file path "caf\u00e9.js": same path as "cafe\u0301.js" ignoring case'],
        ),
        (
            lambda f: f.update({"s.js": b"x", "\u017f.js": b"long s"}),
            ['duplicate file path "\u017f.js": same path as "s.js" ignoring case'],
        ),
        (
            lambda f: f.update({"tools": b"a file named like the entries' directory"}),
            [
                'file and directory of the same name "tools/hello.ts": its directory "tools" is'
                ' the file "tools"'
            ],
        ),
        (
            lambda f: f.update({"Lib": b"x", "lib/a.js": b"y"}),
            [
                'file and directory of the same name "lib/a.js": its directory "lib" is the file "Lib"'
            ],
        ),
    ],
)
def test_each_package_rule(change: object, expected: list[str]) -> None:
    files = package_files()
    change(files)  # type: ignore[operator]
    problems = problems_of(files)
    assert len(problems) == len(expected)
    for problem, prefix in zip(problems, expected, strict=True):
        assert problem.startswith(prefix)


def test_file_size_limit_is_inclusive() -> None:
    validate_package_files(package_files(extra={"big.bin": b"\0" * MAX_FILE_BYTES}))


def test_file_count_limit() -> None:
    files = package_files()
    base = len(files)
    files.update({f"data/{i}.json": b"{}" for i in range(MAX_FILES - base)})
    validate_package_files(files)
    files["data/one-more.json"] = b"{}"
    assert problems_of(files) == [f"package has {MAX_FILES + 1} files (max {MAX_FILES})"]


def test_manifest_field_problems_name_the_file() -> None:
    files = package_files(manifest_dict(name="Bad", tools=[tool_dict(timeoutMs=0)]))
    assert problems_of(files) == [
        "manifest.json: name: may only contain lowercase letters, digits and dashes",
        "manifest.json: tools[0].timeoutMs: must be an integer between 1 and 60000",
    ]


def test_every_problem_at_once() -> None:
    files = package_files(
        manifest_dict(tools=[tool_dict(), tool_dict(name="other", entry="tools/other.js")])
    )
    del files["tools/other.js"]
    files["SKILL.md"] = b""
    files[".DS_Store"] = b"x"
    files["README.md"] = b"a"
    files["readme.MD"] = b"b"
    assert problems_of(files) == [
        'disallowed file ".DS_Store": hidden files and node_modules are not allowed in packages',
        'duplicate file path "readme.MD": same path as "README.md" ignoring case and Unicode'
        " normalization, and trailing dots and spaces",
        "SKILL.md is empty",
        'tool "other": entry file "tools/other.js" is missing',
    ]


def test_invalid_manifest_still_reports_file_problems() -> None:
    files = package_files()
    files["manifest.json"] = json.dumps(manifest_dict(version="1")).encode()
    files["node_modules/a.js"] = b"x"
    del files["SKILL.md"]
    assert problems_of(files) == [
        'manifest.json: version: "1" is not a valid semantic version',
        'disallowed file "node_modules/a.js": hidden files and node_modules are not allowed in packages',
        "SKILL.md is missing",
    ]
