"""``splice secret-scan``: find credentials in a repository, build output or a packed package.

What is looked for (docs/security.md):

- the exact values of the configured provider keys (``broker/keys.py``: environment, nearest
  ``.env.local`` / ``.env``, ``SPLICE_HOME/.env``), reported by variable name;
- the known key formats of ``security/redact.py`` (one source of patterns): PEM private keys,
  Splice, GitHub, OpenAI/Anthropic-style, Slack, AWS, Google keys and JWTs. The context
  patterns of redaction (``Authorization:`` values, ``NAME=value``) are not findings: they
  describe where a secret would be, not a secret.

``splice publish`` runs the same scan over the files it is about to upload (``scan_files``).

Where: a directory holding ``.git`` → the files git tracks; any other directory (build
output), or one whose ``.git`` git cannot read → every file under it; a ``.tar.gz`` /
``.tgz`` → every entry, read through the safe archive reader; any other file → that file.

Findings are ``path:line`` and a kind, never the secret. Documentation samples are not
findings: a match that says it is one (``EXAMPLE``, ``FAKE``, …), whose characters mostly
run in sequence (``abcdef…``, ``1234…``), a PEM block with no real key body, a JWT whose
"signature" is readable text, or a line marked ``secret-scan: allow``.
"""

from __future__ import annotations

import base64
import errno
import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from splice_build.records import dataclass
from splice_build.security.checkout_git import run_git
from splice_build.security.redact import KEY_FORMATS as REDACTION_KEY_FORMATS
from splice_build.spec.regular_file import read_regular_file

# Names of the key-format classes of redact.py, in its order (docs/compatibility.md#redaction, classes 1-8).
KEY_FORMATS: tuple[str, ...] = tuple(key.kind for key in REDACTION_KEY_FORMATS)
ALLOW_MARKER = "secret-scan: allow"
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
MAX_FILE_BYTES = 16 * 1024 * 1024  # larger files are reported as skipped, not read
MIN_CONFIGURED_VALUE = 8  # shorter configured values would match ordinary text
_SAMPLE_MARKERS = ("EXAMPLE", "FAKE", "DUMMY", "PLACEHOLDER", "REDACTED", "X" * 8, "CHANGEME")
_MIN_PEM_BODY = 40  # an Ed25519 key, the smallest, has 64 base64 characters
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s]|\\n)*")


@dataclass(frozen=True)
class Finding:
    """One secret: where it is and what kind it is (never its value)."""

    path: str
    line: int
    kind: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}"

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "line": self.line, "kind": self.kind}


@dataclass(frozen=True)
class ScanReport:
    """``files``: how many files were read (a packed package's members count one by one)."""

    findings: tuple[Finding, ...]
    files: int
    skipped: tuple[tuple[str, str], ...]  # (path shown, why it was not read)

    @property
    def files_with_secrets(self) -> int:
        return len({finding.path for finding in self.findings})

    def summary(self) -> str:
        """What a person reads last: how many files were scanned and how many hold secrets."""
        scanned = f"{self.files} file{'' if self.files == 1 else 's'} scanned"
        if not self.findings:
            return f"No secrets found; {scanned}"
        count = len(self.findings)
        return (
            f"{count} secret{'' if count == 1 else 's'} found in {self.files_with_secrets} "
            f"of {scanned}"
        )


def _sequential(text: str) -> bool:
    body = re.sub(r"[^A-Za-z0-9]", "", text)
    pairs = list(itertools.pairwise(body))
    steps = sum(1 for a, b in pairs if ord(b) - ord(a) in (0, 1))
    return bool(pairs) and steps >= 0.6 * len(pairs)


def _readable_jwt_signature(token: str) -> bool:
    signature = token.split(".")[2] if token.count(".") >= 2 else ""
    try:
        raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    except ValueError:
        return False
    return bool(raw) and sum(32 <= c < 127 for c in raw) >= 0.9 * len(raw)


def is_sample(kind: str, match: str, following: str) -> bool:
    """Whether a format match is a documentation or test sample rather than a credential."""
    if any(marker in match.upper() for marker in _SAMPLE_MARKERS):
        return True
    if kind == "PEM private key":
        header_end = match.find("-----", 10) + 5
        body = _PEM_BODY.match(following if header_end >= len(match) else match[header_end:])
        text = (body.group(0) if body else "").replace("\\n", "")
        return len(re.sub(r"\s", "", text)) < _MIN_PEM_BODY
    if kind == "JSON Web Token" and _readable_jwt_signature(match):
        return True
    return _sequential(match)


def scan_text(text: str, where: str, values: Sequence[tuple[str, str]] = ()) -> list[Finding]:
    """Findings in one text; ``values`` are ``(variable, secret)`` pairs to look for exactly."""
    findings: list[Finding] = []
    # Only the formats whose literals the text holds, and per line again: a pattern scan per
    # line and format made text of many short lines cost 10 µs a character (fuzz/README.md).
    keys = [key for key in REDACTION_KEY_FORMATS if key.may_match(text)]
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if ALLOW_MARKER in line:
            continue
        for name, value in values:
            if len(value) >= MIN_CONFIGURED_VALUE and value in line:
                findings.append(Finding(where, number, f"configured value of {name}"))
        following: str | None = None  # the next 40 lines, joined once per line with a match
        for key in keys:
            if not key.may_match(line):
                continue
            for match in key.finditer(line):
                if following is None:
                    following = "\n".join(lines[number : number + 40])
                if not is_sample(key.kind, match.group(0), following):
                    findings.append(Finding(where, number, key.kind))
    return list(dict.fromkeys(findings))


def _git_files(root: Path) -> list[Path] | None:
    listed = run_git(root, "ls-files", "-z", "--cached")
    if listed is None:
        return None
    return [root / name for name in listed.decode("utf-8", "surrogateescape").split("\0") if name]


def _listed_files(root: Path) -> list[Path]:
    """The files git tracks under a checkout, else every file.

    A ``.git`` that git cannot read (an empty file or directory, a repository another user
    owns, which git refuses, a FIFO for its index, or no git at all) means every file is
    scanned: the scan reads more, it never stops with an internal error."""
    listed = _git_files(root) if (root / ".git").exists() else None
    return _all_files(root) if listed is None else listed


def _all_files(root: Path) -> list[Path]:
    """Every file under ``root`` outside ``.git``, links not followed, unreadable directories
    passed over. The walk keeps its own stack: a checkout nested thousands of levels deep is
    walked, where a recursive one (``Path.rglob``) ended in ``RecursionError``."""
    found: list[Path] = []
    pending = [root]
    while pending:
        try:
            with os.scandir(pending.pop()) as scan:
                entries = [entry for entry in scan if entry.name != ".git"]
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                pending.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                found.append(Path(entry.path))
    return sorted(found)


def _link_on_the_way(root: Path, path: Path) -> bool:
    """Whether ``path`` or a directory between ``root`` and it is a symbolic link. git lists
    its index, not the tree: a checkout's index may name ``a/id_rsa`` where ``a`` is a link
    to a directory elsewhere on the machine, which the scan would then read."""
    current = root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


def _texts(target: Path, shown: str) -> Iterator[tuple[str, str | None, str]]:
    """``(shown path, text, why)`` for each file of ``target``; text None (and ``why``) when
    skipped. A file is read only if it is a regular file (a FIFO would block the scan, a link
    to ``/dev/zero`` would fill the memory) and at most ``MAX_FILE_BYTES + 1`` of it, decided
    on the opened file (``read_regular_file``)."""
    if target.is_dir():
        files = _listed_files(target)
        for path in files:
            if path.is_file() and not _link_on_the_way(target, path):
                yield from _texts(
                    path, f"{shown.rstrip('/')}/{path.relative_to(target).as_posix()}"
                )
        return
    try:
        data = read_regular_file(target, MAX_FILE_BYTES)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            yield shown, None, "larger than the scan limit"
            return
        if exc.errno == errno.EINVAL:
            yield shown, None, "not a regular file"
            return
        raise
    if target.name.endswith(ARCHIVE_SUFFIXES):
        from splice_build.errors import SpliceError
        from splice_build.spec.archive import read_archive

        try:
            entries = read_archive(data)
        except SpliceError:
            entries = None  # not a package archive after all: its bytes are scanned as they are
        if entries is not None:
            for name, content in sorted(entries.items()):
                yield f"{shown}!{name}", content.decode("utf-8", "replace"), ""
            return
    yield shown, data.decode("utf-8", "replace"), ""


def scan_files(files: Mapping[str, bytes], values: Sequence[tuple[str, str]] = ()) -> ScanReport:
    """Scan a package's files (path → bytes, as ``spec/pack.collect_package_files`` gives them):
    what ``splice publish`` checks before anything leaves the machine."""
    findings: list[Finding] = []
    for path, data in files.items():
        findings += scan_text(data.decode("utf-8", "replace"), path, values)
    return ScanReport(tuple(findings), len(files), ())


def scan_paths(
    targets: Iterable[tuple[Path, str]], values: Sequence[tuple[str, str]] = ()
) -> ScanReport:
    """Scan ``(path, name to show)`` targets. Raises OSError / SpliceError for unreadable input."""
    findings: list[Finding] = []
    skipped: list[tuple[str, str]] = []
    files = 0
    for target, shown in targets:
        for where, text, why in _texts(target, shown):
            if text is None:
                skipped.append((where, why))
                continue
            files += 1
            findings += scan_text(text, where, values)
    return ScanReport(tuple(findings), files, tuple(skipped))
