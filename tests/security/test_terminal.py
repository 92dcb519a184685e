"""terminal_safe: every code point a terminal would act on or hide comes out as a visible
escape, everything shown as a glyph or a space passes (docs/security.md#terminal-output)."""

from __future__ import annotations

import json
import re
import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from splice_build.security import terminal
from splice_build.security.terminal import json_terminal_safe, one_line, terminal_safe

ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Letters and marks that show nothing (Default_Ignorable_Code_Point outside Cf and Cn, but
# the emoji and text presentation selectors U+FE0E/U+FE0F).
INVISIBLE = frozenset(
    (
        *(0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x3164),
        0xFFA0,
        *range(0xFE00, 0xFE0E),
        *range(0xE0100, 0xE01F0),
    )
)
_ESCAPE = re.compile(r"\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\U([0-9a-f]{8})")


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(next(g for g in m.groups() if g), 16)), text)


def test_every_code_point_of_the_escaped_categories_is_escaped_and_the_rest_passes() -> None:
    wrong = []
    for point in range(sys.maxunicode + 1):
        char = chr(point)
        shown = terminal_safe(char)
        if char in "\n\t":
            expected = char
        elif unicodedata.category(char) in ESCAPED_CATEGORIES or point in INVISIBLE:
            expected = f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"
            if point >= 0x10000:
                expected = f"\\U{point:08x}"
        else:
            expected = char
        if shown != expected:
            wrong.append(f"U+{point:04X}: {shown!r}")
    assert wrong == []


def test_the_attacks_named_in_the_issue_are_visible() -> None:
    attack = "ok\x1b]52;c;ZXZpbA==\x07\x9b2J\r\u202eexe.txt\u2066\u2028\u200b"
    assert terminal_safe(attack) == (
        "ok\\x1b]52;c;ZXZpbA==\\x07\\x9b2J\\x0d\\u202eexe.txt\\u2066\\u2028\\u200b"
    )
    assert terminal_safe("a\tb\nc \u00a0é\u0301 漢 🙂") == "a\tb\nc \u00a0é\u0301 漢 🙂"


@given(st.text(alphabet=st.characters(exclude_characters="\\")))
def test_no_escaped_category_survives_and_the_escapes_give_the_text_back(text: str) -> None:
    shown = terminal_safe(text)
    assert all(c in "\n\t" or unicodedata.category(c) not in ESCAPED_CATEGORIES for c in shown)
    assert _unescape(shown) == text


@given(st.text(alphabet=st.characters(exclude_characters="\\")))
def test_one_line_is_terminal_safe_without_line_breaks_or_tabs(text: str) -> None:
    shown = one_line(text)
    assert "\n" not in shown and "\t" not in shown
    assert all(unicodedata.category(c) not in ESCAPED_CATEGORIES for c in shown)
    assert _unescape(shown) == text


@given(
    st.recursive(
        st.text() | st.integers(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)
    )
)
def test_json_documents_keep_their_value_and_show_no_hidden_code_point(value: object) -> None:
    document = json_terminal_safe(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(document) == value
    assert all(c in "\n" or unicodedata.category(c) not in ESCAPED_CATEGORIES for c in document)


@pytest.mark.parametrize("hidden", ["\u009b", "\u202e", "\U000e0041", "\u200b"])
def test_json_documents_past_one_piece_are_escaped_at_every_place(hidden: str) -> None:
    """A document longer than the piece ``json_terminal_safe`` translates at once, with a
    hidden code point (one outside the BMP among them) at every place around each border and
    at both ends: the same value back, nothing hidden left."""
    piece = terminal._JSON_PIECE
    text = "x" * (3 * piece)
    for at in [0, 1, piece - 2, piece - 1, piece, piece + 1, 2 * piece - 1, len(text) - 1]:
        value = {"t": text[:at] + hidden + text[at:]}
        document = json_terminal_safe(json.dumps(value, ensure_ascii=False))
        assert json.loads(document) == value
        assert hidden not in document, at


def test_a_run_of_variation_selectors_cannot_hide_text_after_a_glyph() -> None:
    """Bytes smuggled as variation selectors after an emoji show nothing on a terminal or in
    an MCP client; a lone emoji presentation selector stays as it is."""
    smuggled = "ok \U0001f600" + "".join(chr(0xE0100 + b) for b in b"hi") + "\ufe01\u034f\u3164"
    assert terminal_safe(smuggled) == ("ok \U0001f600\\U000e0168\\U000e0169\\ufe01\\u034f\\u3164")
    assert terminal_safe("\u2764\ufe0f") == "\u2764\ufe0f"
