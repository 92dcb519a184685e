"""Which files may be in a package archive (docs/compatibility.md#package-format), for the writer and both readers.

One rule set, so that everything ``pack_archive`` writes is accepted by ``read_archive`` and
everything an untrusted archive may carry is what a packed directory could have produced: safe
relative paths only, no hidden segment, no ``node_modules``, at most 500 files of at most 2 MiB
each, and no two paths that one file system could not hold side by side (``PathClaims``). The
writer reports ``INVALID_BUNDLE``; the readers report ``INVALID_PACKAGE``.
"""

from __future__ import annotations

from splice_build.errors import ErrorCode, SpecError
from splice_build.records import dataclass
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_FILES
from splice_build.spec.paths import (
    MAX_SEGMENT_BYTES,
    fold_name,
    is_safe_relative_path,
    long_segment,
)


def quote_path(path: str) -> str:
    """The path in double quotes with unprintable characters escaped (safe to show people)."""
    shown = "".join(
        char if char.isprintable() and char not in '"\\' else _escape(char) for char in path
    )
    return f'"{shown}"'


def _escape(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def path_problem(path: str) -> str | None:
    """Why ``path`` may not be a file of a package, or None when it may."""
    if not is_safe_relative_path(path, allow_dot=False):
        return (
            "unsafe path (must be relative, at most 256 characters, with no '..', '.' or empty"
            " segment, backslash, NUL or drive prefix)"
        )
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            return "not valid Unicode (lone surrogate)"
    if long_segment(path) is not None:
        return f"a name longer than {MAX_SEGMENT_BYTES} bytes (no file system holds it)"
    for segment in path.split("/"):
        if segment.startswith("."):
            return "hidden files are not allowed in packages"
        if segment == "node_modules":
            return "node_modules is not allowed in packages"
    return None


@dataclass(frozen=True)
class Clash:
    """Why a path cannot join the paths claimed before it: ``title`` says what kind of clash,
    ``reason`` names the path it clashes with."""

    title: str
    reason: str


class PathClaims:
    """The paths of one package, compared as ``stored_name`` compares them.

    A path clashes with an earlier one when both fold to the same path (one file would
    overwrite the other), or when one is a directory of the other (``lib`` and ``lib/a.js``:
    no file system holds a file and a directory under one name, so writing the package would
    fail halfway).
    """

    def __init__(self) -> None:
        self._files: dict[str, str] = {}  # folded path -> the path claimed
        self._directories: dict[str, str] = {}  # folded directory -> the first path inside it

    def claim(self, path: str) -> Clash | None:
        """Claim ``path`` (a safe relative path), or say why it clashes (claiming nothing)."""
        folded = stored_name(path)
        if folded in self._files:
            return Clash(
                "Duplicate file path",
                f"same path as {quote_path(self._files[folded])} ignoring case and Unicode"
                " normalization, and trailing dots and spaces",
            )
        if folded in self._directories:
            inside = self._directories[folded]
            return Clash(
                "File and directory of the same name",
                f"{quote_path(inside)} needs {quote_path(_directory_of(inside, folded))} to be"
                " a directory",
            )
        directories = _folded_directories(folded)
        clash = self._file_above(path, directories)
        if clash is not None:
            return clash
        self._files[folded] = path
        for directory in directories:
            self._directories.setdefault(directory, path)
        return None

    def _file_above(self, path: str, directories: list[str]) -> Clash | None:
        """The clash of ``path`` with a file claimed as one of its ``directories``."""
        for directory in directories:
            if directory in self._files:
                return Clash(
                    "File and directory of the same name",
                    f"its directory {quote_path(_directory_of(path, directory))} is the file"
                    f" {quote_path(self._files[directory])}",
                )
        return None

    def claim_directory(self, path: str) -> Clash | None:
        """Claim ``path`` (a safe relative path) as a directory, as an archive's directory
        entry does: GNU tar makes it one over a file of that name, or fails under one."""
        folded = stored_name(path)
        if folded in self._files:
            return Clash(
                "File and directory of the same name",
                f"the directory is the file {quote_path(self._files[folded])}",
            )
        directories = _folded_directories(folded)
        clash = self._file_above(path, directories)
        if clash is not None:
            return clash
        for directory in [*directories, folded]:
            self._directories.setdefault(directory, f"{path}/")
        return None


def stored_name(path: str) -> str:
    """``path`` as every file system an install may write to stores it: each name folded by
    ``fold_name`` (``hello.js.`` is ``hello.js`` on Windows, ``tools./x.js`` is in ``tools``).
    The number of segments is kept."""
    return "/".join(fold_name(segment) for segment in path.split("/"))


def _folded_directories(folded: str) -> list[str]:
    """``a``, ``a/b`` for ``a/b/c``: every directory the path needs, outermost first."""
    segments = folded.split("/")
    return ["/".join(segments[:count]) for count in range(1, len(segments))]


def _directory_of(path: str, folded_directory: str) -> str:
    """The directory of ``path`` that folds to ``folded_directory``, as ``path`` spells it."""
    return "/".join(path.split("/")[: folded_directory.count("/") + 1])


class PackageFiles:
    """Collects files one at a time and raises at the first one that breaks a rule.

    ``files`` keeps the accepted files in the order they were added.
    """

    def __init__(self, code: ErrorCode) -> None:
        self._code = code
        self._claims = PathClaims()
        self._directories = 0  # directory entries accepted
        self.files: dict[str, bytes] = {}

    def add(self, path: str, content: bytes | bytearray | memoryview) -> None:
        """Accept one file; raises SpecError(code) naming the entry when it breaks a rule."""
        where = f"entry {quote_path(path)}"
        problem = path_problem(path)
        if problem is not None:
            raise SpecError(
                self._code, "Unsafe file path in archive", details=[f"{where}: {problem}"]
            )
        if len(self.files) >= MAX_FILES:
            raise SpecError(
                self._code,
                f"Archive has more than {MAX_FILES} files",
                details=[f"{where}: file number {len(self.files) + 1}"],
            )
        if len(content) > MAX_FILE_BYTES:
            raise SpecError(
                self._code,
                f"File exceeds {MAX_FILE_BYTES} bytes",
                details=[f"{where}: {len(content)} bytes"],
            )
        clash = self._claims.claim(path)
        if clash is not None:
            raise SpecError(
                self._code, f"{clash.title} in archive", details=[f"{where}: {clash.reason}"]
            )
        self.files[path] = bytes(content)

    def add_directory(self, path: str) -> None:
        """Accept a directory entry of an archive: it creates nothing, but may not clash
        with a file (``PathClaims.claim_directory``). At most ``MAX_FILES`` of them, as of
        files: a claim costs up to 0.4 ms for a path of 128 names, and a tar of 16 MiB holds
        32,768 entries (6 s of claims)."""
        where = f"entry {quote_path(path + '/')}"
        if self._directories >= MAX_FILES:
            raise SpecError(
                self._code,
                f"Archive has more than {MAX_FILES} directory entries",
                details=[f"{where}: directory entry number {self._directories + 1}"],
            )
        self._directories += 1
        clash = self._claims.claim_directory(path)
        if clash is not None:
            raise SpecError(
                self._code, f"{clash.title} in archive", details=[f"{where}: {clash.reason}"]
            )
