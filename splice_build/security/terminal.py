"""Text that cannot drive a terminal (docs/security.md#terminal-output).

Tool logs, tool errors, manifest and registry strings are written by someone else. A raw
``ESC`` starts an escape sequence (``ESC ]52;`` writes the clipboard, ``ESC [2J`` clears the
screen), ``CSI`` (U+009B) does the same in one code point, ``CR`` overwrites what was shown,
and bidi overrides (U+202E) or other invisible format characters make a name read as
something else. ``terminal_safe`` keeps what a terminal shows as a glyph or a space and turns
everything else into a visible escape (``\\x1b``, ``\\u202e``, ``\\U000e0001``).

The decision is by Unicode general category, as an allow-list: letters, marks, numbers,
punctuation, symbols and space separators pass (but for the few of them that show nothing:
``spec/plain_text.invisible``), as do newline and tab; control (Cc),
format (Cf), line and paragraph separators (Zl, Zp), surrogates (Cs, which also carry the
undecodable bytes of a non-UTF-8 file name), private use (Co) and unassigned (Cn) code points
are escaped. A backslash passes unchanged: the escapes are for reading, not for decoding.

``one_line`` is the same rule for one field of someone else's data inside a line Splice
composes (a description, a publisher, an error's detail): there a newline or a tab is escaped
too, so the field cannot draw a line of its own (a fake ``permissions: none`` under the real
heading) or push what follows out of its column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from splice_build.spec.plain_text import invisible, is_plain_line

if TYPE_CHECKING:
    from splice_build.spec.manifest import Manifest

# The general categories (by first letter, or whole) that a terminal shows as themselves.
_SHOWN_CLASSES = frozenset("LMNPS")
_SHOWN_CATEGORIES = frozenset({"Zs"})
_SHOWN_CONTROLS = frozenset("\n\t")


def is_shown(char: str) -> bool:
    """Whether ``char`` (one code point) reaches the terminal unchanged."""
    if char in _SHOWN_CONTROLS:
        return True
    if invisible().match(char):
        return False
    import unicodedata  # only for text that is not plain: most output never loads it

    category = unicodedata.category(char)
    return category[0] in _SHOWN_CLASSES or category in _SHOWN_CATEGORIES


def escape(char: str) -> str:
    """The visible escape of one code point: ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``."""
    point = ord(char)
    if point < 0x100:
        return f"\\x{point:02x}"
    if point < 0x10000:
        return f"\\u{point:04x}"
    return f"\\U{point:08x}"


def is_shown_in_line(char: str) -> bool:
    """Whether ``char`` (one code point) reaches the terminal unchanged inside one line."""
    return char not in _SHOWN_CONTROLS and is_shown(char)


class _Shown(dict[int, str]):
    """``str.translate`` table: code point → itself when ``shown``, else its ``escaped`` form,
    filled on first sight.

    Lookups of code points already seen stay in C; the table is emptied when it grows past
    ``_MAX_CACHED`` entries, so text made of many distinct code points cannot grow it without
    bound in a long-running process (``splice mcp``).
    """

    def __init__(
        self, shown: Callable[[str], bool], escaped: Callable[[str], str] = escape
    ) -> None:
        super().__init__()
        self._is_shown = shown
        self._escaped = escaped

    def __missing__(self, point: int) -> str:
        if len(self) >= _MAX_CACHED:
            self.clear()
        char = chr(point)
        shown = char if self._is_shown(char) else self._escaped(char)
        self[point] = shown
        return shown


_MAX_CACHED = 1 << 16
_TABLE = _Shown(is_shown)
_LINE_TABLE = _Shown(is_shown_in_line)


def terminal_safe(text: str) -> str:
    """``text`` with every code point a terminal would not show as itself made visible.

    Lines without a special character (the usual case) cost one C-level ``isprintable``
    scan; only the others are translated, through a cached table (1 MiB of ``ESC`` takes a
    fraction of a second, not seconds).
    """
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not is_plain_line(line.replace("\t", "")):
            lines[index] = line.translate(_TABLE)
    return "\n".join(lines)


def one_line(text: str) -> str:
    """``text`` as one line: ``terminal_safe``, and a newline or tab escaped as well."""
    return text if is_plain_line(text) else text.translate(_LINE_TABLE)


def _json_escape(char: str) -> str:
    """The JSON escape of one code point (a surrogate pair above U+FFFF)."""
    point = ord(char)
    if point < 0x10000:
        return f"\\u{point:04x}"
    point -= 0x10000
    return f"\\u{0xD800 + (point >> 10):04x}\\u{0xDC00 + (point & 0x3FF):04x}"


_JSON_TABLE = _Shown(is_shown, _json_escape)


def json_terminal_safe(document: str) -> str:
    """JSON text (as ``json.dumps`` writes it) with every code point ``terminal_safe`` would
    escape written as a JSON escape of four hex digits (``\\u202e``) instead.

    A program reading it gets exactly the same value (outside string literals JSON text is
    made of ASCII punctuation, newlines and spaces, which pass), and a terminal showing it
    gets no raw ``CSI`` (U+009B), bidi override or zero-width character: JSON itself escapes
    only the C0 controls.

    A document that needs escaping is translated in pieces of ``_JSON_PIECE`` code points,
    and only the pieces that need it: one non-breaking space in a megabyte of scraped text
    (an MCP result) costs one piece's translation, not the whole document's. An escape
    replaces one code point, so a piece's border never splits one.
    """
    if is_plain_line(document.replace("\n", "")):
        return document
    pieces = (document[at : at + _JSON_PIECE] for at in range(0, len(document), _JSON_PIECE))
    return "".join(
        piece if is_plain_line(piece.replace("\n", "")) else piece.translate(_JSON_TABLE)
        for piece in pieces
    )


_JSON_PIECE = 1 << 14


def one_line_fields(value: Any) -> Any:
    """A copy of the JSON value ``value`` with every string, key or item, made ``one_line``:
    what a command's text is rendered from (cli/output.py ``Output.result``)."""
    if isinstance(value, str):
        return one_line(value)
    if isinstance(value, dict):
        return {one_line(str(key)): one_line_fields(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [one_line_fields(item) for item in value]
    return value


def require_visible_paths(paths: Iterable[str]) -> None:
    """Refuse package file names that hold what a terminal would not show as itself.

    ``validate`` and ``publish`` call it beside ``require_visible_text``: a name with a line
    break, ``ESC``, a bidi override or a zero-width character reads as another name, or as
    none, in a listing of the checkout, so the author cannot see what they would publish. The
    archive format allows such names (docs/compatibility.md#package-format); they are refused
    before they reach a registry. Raises SpecError INVALID_PACKAGE, one detail per name.
    """
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.entry_rules import quote_path

    problems = []
    for path in paths:
        hidden = dict.fromkeys(escape(c) for c in path if not is_shown_in_line(c))
        if hidden:
            problems.append(
                f"entry {quote_path(path)}: must not contain control or invisible format "
                f"characters (found {', '.join(hidden)})"
            )
    if problems:
        raise SpecError(
            ErrorCode.INVALID_PACKAGE,
            "Package file names must read as themselves",
            details=problems,
            hint="Rename the files (or move them out of the package directory).",
        )


def require_visible_text(manifest: Manifest) -> None:
    """Refuse a manifest whose strings hold what a terminal would not show as itself.

    ``validate`` and ``publish`` call it (docs/security.md#terminal-output): a description
    or file path with ``ESC``, ``CSI``, a bidi override or another control or format
    character is shown escaped by every Splice command, but it is refused before it reaches
    a registry. Keys and values of the normalized manifest are checked, each problem naming
    its field, at most ``MAX_TEXT_PROBLEMS`` of them. Raises SpecError INVALID_MANIFEST.

    A ``default`` may nest a million levels (docs/compatibility.md#manifest), so the walk
    keeps no path per value: each value holds its parent's place and the start of its path
    (``_Place``), and a path is written out only for a problem, a long one as its first and
    last ``_PATH_HALF`` characters (a path copied into every value made the walk quadratic:
    `splice validate` of a 2 MB manifest ran for more than an hour).
    """
    from splice_build.errors import ErrorCode, SpecError

    problems: list[str] = []
    stack: list[tuple[_Place | None, object]] = [(None, manifest.to_json())]
    while stack and len(problems) <= MAX_TEXT_PROBLEMS:
        place, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((_Place(place, key), value[key]) for key in reversed(list(value)))
        elif isinstance(value, list):
            stack.extend((_Place(place, i), item) for i, item in reversed(list(enumerate(value))))
        texts = [("", value)] if isinstance(value, str) else []
        if place is not None and isinstance(place.step, str):
            texts.append((" (key)", place.step))
        for label, text in texts:
            if is_plain_line(text):  # the fast path: nothing in it is hidden
                continue
            hidden = dict.fromkeys(escape(c) for c in text if not is_shown(c))
            if hidden:
                problems.append(
                    f"{terminal_safe(_place_text(place))}{label}: must not contain control "
                    f"or invisible format characters (found {', '.join(hidden)})"
                )
    if len(problems) > MAX_TEXT_PROBLEMS:
        problems[MAX_TEXT_PROBLEMS:] = ["further problems are not listed"]
    if problems:
        raise SpecError(ErrorCode.INVALID_MANIFEST, "manifest.json is invalid", details=problems)


MAX_TEXT_PROBLEMS = 100
_PATH_HALF = 500


class _Place:
    """A value's place in the manifest: its parent's place, its key or index, and ``head``,
    the start of its path as ``spec.validation.format_path`` writes it (once longer than
    ``2 * _PATH_HALF`` characters, the parent's own string: no long path is copied)."""

    __slots__ = ("head", "parent", "step")

    def __init__(self, parent: _Place | None, step: str | int) -> None:
        self.parent = parent
        self.step = step
        above = parent.head if parent is not None else ""
        self.head = above if len(above) > 2 * _PATH_HALF else _joined(above, step)


def _joined(path: str, step: str | int) -> str:
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


def _place_text(place: _Place | None) -> str:
    """The path of ``place``; a long one as its start, ``…`` and its end."""
    if place is None:
        return ""
    if len(place.head) <= 2 * _PATH_HALF:
        return place.head
    tail = ""
    node: _Place | None = place
    while node is not None and len(tail) < _PATH_HALF:
        step = node.step
        tail = (f"[{step}]" if isinstance(step, int) else f".{step[-_PATH_HALF:]}") + tail
        node = node.parent
    return f"{place.head[:_PATH_HALF]}…{tail[-_PATH_HALF:]}"
