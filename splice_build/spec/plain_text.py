"""Text that reads as exactly itself: the rule a grant path must meet (spec/permissions.py)
and the fast path of the terminal filter (security/terminal.py), in one place.

It lives in ``spec`` because a grant's characters are part of the manifest's rules; the
terminal filter builds on it.
"""

from __future__ import annotations

import functools
import re

# Marks and letters by category that show nothing (Unicode's Default_Ignorable_Code_Point
# outside Cf and Cn): the combining grapheme joiner, the Hangul and halfwidth fillers, Khmer
# inherent vowels, Mongolian free variation selectors and every variation selector but
# U+FE0E/U+FE0F (text or emoji presentation). A run of them after one glyph can carry text
# that a model reads and no person sees.
_INVISIBLE = (
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u3164"
    "\ufe00-\ufe0d\uffa0\U000e0100-\U000e01ef]"
)


@functools.cache
def invisible() -> re.Pattern[str]:
    """The pattern of those characters, compiled on first use: ASCII text never needs it,
    and every command prints through this module (a no-op ``sync`` saves the compile)."""
    return re.compile(_INVISIBLE)


def is_plain_line(text: str) -> bool:
    """Whether ``text`` is one line shown exactly as itself: glyphs and the ASCII space only
    (``isprintable`` also refuses a tab and every other space separator; one C-level scan
    each; ASCII text, which holds none of them, skips the search)."""
    if not text.isprintable():
        return False
    return text.isascii() or invisible().search(text) is None
