"""How much a bearer token a person chose could be guessed: a conservative estimate in bits.

Only ``splice mcp --http`` takes a token chosen by its operator (``SPLICE_MCP_TOKEN``); the
registry makes its own (32 random bytes). The estimate cannot know where a token came from,
so it counts only what no simple pattern explains (docs/mcp.md#streamable-http):

- a character worth ``log2`` of its alphabet: 16 for a token of hexadecimal digits only, else
  the sum of the classes it uses (26 lowercase, 26 uppercase, 10 digits, 32 other visible
  ASCII characters);
- nothing for a character that continues the step of the two before it (``aaa``, ``abc``,
  ``0246``, ``zyx``), or lies within a stretch of three or more characters seen earlier in the
  token (``passwordpassword``).

No dictionary is consulted: words and dates count as random characters, so a token that
passes is not thereby a good one. One made by a generator of random bytes passes with a wide
margin (``secrets.token_urlsafe(32)``: about 270 bits counted, 256 in truth).
"""

from __future__ import annotations

import math
import string

# Only the token's SHA-256 is kept, in the server's memory: it can only be guessed online, one
# request at a time, and the server throttles failures (mcp/transport/auth_throttle.py).
MIN_TOKEN_BITS = 64
_REPEAT = 3  # a stretch this long seen earlier in the token adds nothing
_HEX = frozenset(string.hexdigits.lower()), frozenset(string.hexdigits.upper())
_CLASSES = (
    (frozenset(string.ascii_lowercase), 26),
    (frozenset(string.ascii_uppercase), 26),
    (frozenset(string.digits), 10),
)
_OTHER = 32  # visible ASCII that is no letter or digit


def alphabet_size(token: str) -> int:
    """The size of the alphabet ``token`` seems drawn from (its classes; 16 for hex)."""
    characters = set(token)
    if any(characters <= digits for digits in _HEX):
        return 16
    size = sum(count for members, count in _CLASSES if characters & members)
    if any(not character.isascii() or not character.isalnum() for character in characters):
        size += _OTHER
    return size


def estimated_bits(token: str) -> float:
    """The bits of ``token`` that no repeat, run or step explains (see the module's rules)."""
    if not token:
        return 0.0
    explained = [False] * len(token)
    for index in range(2, len(token)):
        step = ord(token[index]) - ord(token[index - 1])
        if step == ord(token[index - 1]) - ord(token[index - 2]):
            explained[index] = True
    for start in range(1, len(token) - _REPEAT + 1):
        if token[start : start + _REPEAT] in token[: start + _REPEAT - 1]:
            explained[start : start + _REPEAT] = [True] * _REPEAT
    counted = explained.count(False)
    return counted * math.log2(alphabet_size(token))
