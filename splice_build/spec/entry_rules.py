"""Which files may be in a package archive (docs/compatibility.md#package-format), for the writer and both readers.

One rule set, so that everything ``pack_archive`` writes is accepted by ``read_archive`` and
everything an untrusted archive may carry is what a packed directory could have produced: safe
relative paths only, no hidden segment, no ``node_modules``, at most 500 files of at most 2 MiB
each, and no two paths equal ignoring case (they would collide on macOS and Windows file
systems). The writer reports ``INVALID_BUNDLE``; the readers report ``INVALID_PACKAGE``.
"""

from __future__ import annotations

from splice_build.errors import ErrorCode, SpecError
from splice_build.spec.limits import MAX_FILE_BYTES, MAX_FILES
from splice_build.spec.paths import is_safe_relative_path


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
    for segment in path.split("/"):
        if segment.startswith("."):
            return "hidden files are not allowed in packages"
        if segment == "node_modules":
            return "node_modules is not allowed in packages"
    return None


class PackageFiles:
    """Collects files one at a time and raises at the first one that breaks a rule.

    ``files`` keeps the accepted files in the order they were added.
    """

    def __init__(self, code: ErrorCode) -> None:
        self._code = code
        self._folded: dict[str, str] = {}
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
        key = path.lower()
        if key in self._folded:
            raise SpecError(
                self._code,
                "Duplicate file path in archive",
                details=[f"{where}: same path ignoring case as {quote_path(self._folded[key])}"],
            )
        self._folded[key] = path
        self.files[path] = bytes(content)
