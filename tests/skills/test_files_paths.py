"""The path table of @splice/files (docs/skills.md), run through the real tools in the real sandbox.

Every refused path gets its exact code from ``read``, ``write`` and ``list``, and nothing is
created; every accepted path is written, lands at exactly that literal name inside workspace/
(never percent-decoded, never Unicode-normalized) and reads back. Canaries outside workspace/
prove nothing else was read or written.

Decision recorded here and in docs/skills.md: the rules' ``credentials*`` and ``secret(s)*`` are
globs, so every name *starting* with "credentials" or "secret" is refused, ``secretary.txt``
included; names that merely contain the word (``my-secrets.txt``, ``top-secret.md``) are not.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testing.skill_runner import Canaries, SkillProject, error_codes, plant_canaries, skill_project

OUT = "PATH_OUTSIDE_SANDBOX"
BAD = "INVALID_PATH"
SENSITIVE = "SENSITIVE_PATH"

REFUSED: list[tuple[str, str]] = [
    # absolute, UNC and device-namespace forms
    ("/etc/passwd", OUT),
    ("/", OUT),
    ("/workspace/x", OUT),
    ("/./x", OUT),
    ("//server/share/x", OUT),
    ("//?/C:/Windows/win.ini", OUT),
    ("//./COM1", OUT),
    ("//", OUT),
    # drive letters (absolute and drive-relative)
    ("C:/Windows/win.ini", OUT),
    ("C:x", OUT),
    ("Z:", OUT),
    ("d:/", OUT),
    ("a:b", OUT),
    # home directories
    ("~", OUT),
    ("~/x", OUT),
    ("~root/.bashrc", OUT),
    # parent segments
    ("..", OUT),
    ("../x", OUT),
    ("../../etc/passwd", OUT),
    ("a/../../x", OUT),
    ("a/..", OUT),
    ("a/b/../c", OUT),
    ("../", OUT),
    # the order of the rules (the TypeScript files skill's): length, NUL and backslash first,
    # then absolute forms, then each segment in turn ("..", empty, Windows names, credentials)
    ("../.env", OUT),
    ("/.ssh/id_rsa", OUT),
    ("../" + "a" * 600, BAD),
    ("\\\\server\\share\\x", BAD),
    ("\\\\?\\C:\\x", BAD),
    ("\\\\.\\pipe\\x", BAD),
    ("\\etc\\passwd", BAD),
    ("\\", BAD),
    ("c:\\x", BAD),
    ("~\\x", BAD),
    ("..\\x", BAD),
    ("a\\..\\..\\x", BAD),
    ("a\\b\\..\\..\\..\\x", BAD),
    ("CON/../x", BAD),
    ("a\tb/../x", BAD),
    ("../a\tb", OUT),
    # Windows trims trailing dots and spaces: ".. " and "..." are refused as such names
    (".. /x", BAD),
    ("a/.. ", BAD),
    (".../x", BAD),
    ("a/..../b", BAD),
    (".. ./x", BAD),
    # length
    ("a" * 513, BAD),
    ("a/" * 256 + "x", BAD),
    ("a" * 300, BAD),  # within 512 but longer than a file name may be (ENAMETOOLONG)
    # NUL and control characters
    ("a\0b", BAD),
    ("\0", BAD),
    ("a.txt\0.png", BAD),
    ("a\nb", BAD),
    ("a\tb", BAD),
    ("a\rb", BAD),
    ("\x1b[31m", BAD),
    ("\x7f", BAD),
    ("x\x85y", BAD),
    # backslashes
    ("a\\b", BAD),
    ("a\\", BAD),
    # empty and "." segments
    ("", BAD),
    ("a//b", BAD),
    (".", BAD),
    ("./", BAD),
    ("././a", BAD),
    ("a/./b", BAD),
    ("a/.", BAD),
    ("a///b/", BAD),
    # reserved device names, with any extension, any case, superscript digits
    ("CON", BAD),
    ("con", BAD),
    ("CON.txt", BAD),
    ("nul.tar.gz", BAD),
    ("PRN", BAD),
    ("AUX.json", BAD),
    ("COM1", BAD),
    ("com9.log", BAD),
    ("COM0", BAD),
    ("LPT1", BAD),
    ("lpt9.txt", BAD),
    ("COM\u00b9", BAD),
    ("COM\u00b2.txt", BAD),
    ("LPT\u00b3", BAD),
    ("CONIN$", BAD),
    ("conout$.log", BAD),
    ("CON .txt", BAD),
    ("dir/NUL", BAD),
    ("a/aux/b", BAD),
    # trailing dots and spaces (Windows strips them)
    ("file.", BAD),
    ("file ", BAD),
    (".env.", BAD),
    (".env ", BAD),
    ("name. ", BAD),
    ("a./b", BAD),
    # ":" (alternate data streams) and the other characters Windows forbids
    ("a.txt:secret", BAD),
    ("a.txt::$DATA", BAD),
    ("ab:c", BAD),
    ("x/y:z", BAD),
    ("CC:/x", BAD),
    ("file:name", BAD),
    ("a<b", BAD),
    ("a>b", BAD),
    ('a"b', BAD),
    ("a|b", BAD),
    ("a?b", BAD),
    ("a*b", BAD),
    ("*", BAD),
    ("?", BAD),
    # 8.3 short-name aliases (checked before the credential rules)
    ("SECRET~1", BAD),
    ("PROGRA~1", BAD),
    ("file~1.txt", BAD),
    ("docs/ENVFIL~2.TXT", BAD),
    # a malformed path is reported before a credential name in it, segment by segment
    ("a\\.env", BAD),
    ("CON/.env", BAD),
    (".env/CON", SENSITIVE),
    ("a" * 600 + "/.env", BAD),
    # credential-like names, in any segment and any case
    (".env", SENSITIVE),
    (".ENV", SENSITIVE),
    (".env.local", SENSITIVE),
    (".env.production", SENSITIVE),
    ("config/.env", SENSITIVE),
    ("a/b/c/.env.example", SENSITIVE),
    (".envrc", SENSITIVE),
    ("key.pem", SENSITIVE),
    ("certs/server.PEM", SENSITIVE),
    ("my.key", SENSITIVE),
    ("store.p12", SENSITIVE),
    ("a.pfx", SENSITIVE),
    ("java.jks", SENSITIVE),
    ("x.keystore", SENSITIVE),
    ("pw.kdbx", SENSITIVE),
    ("putty.ppk", SENSITIVE),
    ("pub.asc", SENSITIVE),
    ("backup.gpg", SENSITIVE),
    ("id_rsa", SENSITIVE),
    ("id_rsa.pub", SENSITIVE),
    ("id_ed25519", SENSITIVE),
    ("keys/id_ecdsa", SENSITIVE),
    ("id_dsa", SENSITIVE),
    ("ID_RSA_work", SENSITIVE),
    (".ssh", SENSITIVE),
    (".ssh/config", SENSITIVE),
    ("home/.ssh/authorized_keys", SENSITIVE),
    (".gnupg/pubring.kbx", SENSITIVE),
    (".aws/credentials", SENSITIVE),
    (".AWS/config", SENSITIVE),
    (".azure/accessTokens.json", SENSITIVE),
    (".kube/config", SENSITIVE),
    (".docker/config.json", SENSITIVE),
    (".npmrc", SENSITIVE),
    ("proj/.npmrc", SENSITIVE),
    (".yarnrc", SENSITIVE),
    (".yarnrc.yml", SENSITIVE),
    (".netrc", SENSITIVE),
    (".pgpass", SENSITIVE),
    (".git-credentials", SENSITIVE),
    (".pypirc", SENSITIVE),
    ("credentials", SENSITIVE),
    ("credentials.json", SENSITIVE),
    ("Credentials.yml", SENSITIVE),
    ("creds/credentials-prod.txt", SENSITIVE),
    ("secret", SENSITIVE),
    ("secrets", SENSITIVE),
    ("secrets.yaml", SENSITIVE),
    ("secret.txt", SENSITIVE),
    ("SECRETS.json", SENSITIVE),
    ("secretary.txt", SENSITIVE),
    (".secrets", SENSITIVE),
    ("deep/er/than/.pgpass", SENSITIVE),
    ("secrets/notes.md", SENSITIVE),
]

ACCEPTED: list[str] = [
    # device-name look-alikes that are not device names
    "COM10",
    "com10.txt",
    "LPT10",
    "COM1x",
    "LPT1-notes.txt",
    "console.log",
    "CONSOLE",
    "CON-log",
    "auxiliary.md",
    "nullable.json",
    "prn-notes.txt",
    "CONIN",
    # names near the credential rules that are not credentials
    "docs/env-setup.md",
    "env",
    "environment.md",
    ".environment",
    "aws-costs.csv",
    "aws/config",
    "ssh/notes.md",
    "my-secrets.txt",
    "top-secret.md",
    "credential-helper.md",
    "keys/readme.md",
    "key.txt",
    "pem.txt",
    "certificate.crt",
    "identity.txt",
    # traversal encodings are names, never decoded
    "%2e%2e/x",
    "%2e%2e%2fx",
    "..%2fx",
    "%2E%2E/%2E%2E/etc/passwd",
    "%252e%252e/x",
    "..%5cx",
    "percent%00.txt",
    "question%3F.txt",
    "file%3A.txt",
    # Unicode look-alikes are names, never normalized
    "\uff0e\uff0e/x",  # fullwidth full stops
    "\uff0e\uff0e\uff0fx",  # fullwidth solidus is not a separator
    "\u2025/x",  # two dot leader
    "\u2024\u2024/x",  # one dot leader, twice
    "..\u2215x",  # division slash
    "..\u2044x",  # fraction slash
    "\uff0eenv",
    ".\u0435nv",  # Cyrillic "е"
    "caf\u00e9.txt",
    "cafe\u0301.txt",  # NFD form: a different name from the NFC one above
    "\u65e5\u672c\u8a9e/\u30d5\u30a1\u30a4\u30eb.txt",
    "emoji\U0001f600.txt",
    # other ordinary names
    ".hidden",
    "a/.b",
    "..a",
    "a..b",
    "...a",
    "a/~",
    "a/~b",
    "backup~",
    "space in name.txt",
    " leading-space.txt",
    "UPPER.TXT",
    "semi;colon.txt",
    "$HOME/x",
    "${HOME}",
    "%USERPROFILE%/x",
    "a=b&c.txt",
    "a" * 255,
    "d/" * 255 + "xy",  # exactly 512 characters
]

# One leading "./" (and slashes after it) and trailing slashes are dropped, as in TS:
# (given, the path the tools answer with and create).
NORMALIZED: list[tuple[str, str]] = [
    ("./dot-slash.txt", "dot-slash.txt"),
    (".//dot-slashes.txt", "dot-slashes.txt"),
    ("trailing-slash.txt/", "trailing-slash.txt"),
    ("trailing-slashes.txt///", "trailing-slashes.txt"),
    ("./norm/both.txt/", "norm/both.txt"),
]


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SkillProject, Canaries]]:
    base = tmp_path_factory.mktemp("paths")
    project = skill_project("files", base)
    project.workspace.mkdir()
    canaries = plant_canaries(project, base / "outside")
    yield project, canaries
    canaries.assert_untouched()


def test_table_size() -> None:
    assert len(REFUSED) + len(ACCEPTED) + len(NORMALIZED) >= 150
    assert len({path for path, _ in REFUSED}) == len(REFUSED)
    assert len(set(ACCEPTED)) == len(ACCEPTED)
    assert len("d/" * 255 + "xy") == 512


def _expect(results: list[dict[str, object]], table: list[tuple[str, str]]) -> None:
    got = list(zip([p for p, _ in table], error_codes(results), strict=True))
    assert got == table


def test_refused_by_read(sandbox: tuple[SkillProject, Canaries]) -> None:
    project, canaries = sandbox
    results = project.run_many("read", [{"path": path} for path, _ in REFUSED])
    _expect(results, REFUSED)
    canaries.assert_untouched(results)


def test_refused_by_write_and_nothing_is_created(sandbox: tuple[SkillProject, Canaries]) -> None:
    project, canaries = sandbox
    before = sorted(project.workspace.rglob("*"))
    results = project.run_many(
        "write",
        [{"path": path, "content": canaries.token, "mode": "overwrite"} for path, _ in REFUSED],
    )
    _expect(results, REFUSED)
    assert sorted(project.workspace.rglob("*")) == before
    canaries.assert_untouched()


def test_refused_by_list(sandbox: tuple[SkillProject, Canaries]) -> None:
    """Every third row (each category is represented): list shares read's checks, "." aside."""
    project, canaries = sandbox
    table = [(path, code) for path, code in REFUSED[::3] if path not in ("", ".", "./")]
    results = project.run_many("list", [{"path": path, "recursive": True} for path, _ in table])
    _expect(results, table)
    canaries.assert_untouched(results)


def test_accepted_paths_are_literal_names_inside_workspace(
    sandbox: tuple[SkillProject, Canaries],
) -> None:
    project, canaries = sandbox
    writes = project.run_many(
        "write", [{"path": path, "content": f"content of {path}"} for path in ACCEPTED]
    )
    assert list(zip(ACCEPTED, error_codes(writes), strict=True)) == [
        (path, "OK") for path in ACCEPTED
    ]
    for path, result in zip(ACCEPTED, writes, strict=True):
        assert result["output"]["path"] == path
        on_disk = project.workspace.joinpath(*path.split("/"))
        assert on_disk.read_text(encoding="utf-8") == f"content of {path}", path
    reads = project.run_many("read", [{"path": path} for path in ACCEPTED])
    assert [r["output"]["content"] if r["ok"] else r["error"] for r in reads] == [
        f"content of {p}" for p in ACCEPTED
    ]
    listing = project.run("list", {"recursive": True, "maxEntries": 2000})
    assert listing["ok"] and listing["output"]["hidden"] == 0
    files = {e["path"] for e in listing["output"]["entries"] if e["type"] == "file"}
    assert files >= set(ACCEPTED) - {"d/" * 255 + "xy"}  # deeper than the 16 listed levels
    canaries.assert_untouched(writes, reads, listing)


def test_normalized_paths_name_the_trimmed_path(sandbox: tuple[SkillProject, Canaries]) -> None:
    project, canaries = sandbox
    writes = project.run_many(
        "write", [{"path": given, "content": f"content of {shown}"} for given, shown in NORMALIZED]
    )
    assert [w["output"]["path"] if w["ok"] else w["error"] for w in writes] == [
        shown for _, shown in NORMALIZED
    ]
    for _, shown in NORMALIZED:
        on_disk = project.workspace.joinpath(*shown.split("/"))
        assert on_disk.read_text(encoding="utf-8") == f"content of {shown}"
    reads = project.run_many("read", [{"path": given} for given, _ in NORMALIZED])
    assert [(r["output"]["path"], r["output"]["content"]) for r in reads] == [
        (shown, f"content of {shown}") for _, shown in NORMALIZED
    ]
    listing = project.run("list", {"path": "./norm/"})
    assert listing["output"]["path"] == "norm"
    assert [e["path"] for e in listing["output"]["entries"]] == ["norm/both.txt"]
    canaries.assert_untouched(writes, reads, listing)
