"""The words of one command line with its options first and its operands after, in order.

argparse fills positionals from the first run of operands only: in ``splice add @a/b
--accept-permissions @c/d`` it took ``@a/b`` as every package and left ``@c/d`` over
(``unrecognized arguments``), and ``registry admin --data DIR create-user alice`` filled the
verb and its operands, empty, before ``--data``. Moving each option with its value in front
of the operands lets an option stand anywhere on the line (docs/cli.md), as it already did
between the command word and the first operand. A word is told apart as argparse tells it
(``ArgumentParser._parse_optional``), so what is an operand stays one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def options_first(words: Sequence[str], options: Mapping[str, Any]) -> list[str]:
    """``words`` with every option (and the value it takes) before every operand.

    ``options`` maps each option string to its argparse action (``nargs`` 0: a flag; None: one
    value). A word after ``--`` is an operand; ``--`` stays in front of those. An option whose
    value is missing stays last, for argparse to say so. Operands keep their order."""
    before: list[str] = []
    operands: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            return [*before, *operands, "--", *words[index:]]
        if not _is_option(word, options):
            operands.append(word)
        elif not _takes_next_word(word, options):
            before.append(word)
        elif index == len(words):
            return [*before, *operands, word]
        else:
            before += [word, words[index]]  # the value, whatever it looks like
            index += 1
    return [*before, *operands]


def unknown_options(words: Sequence[str], options: Mapping[str, Any]) -> list[str]:
    """The words before any ``--`` that argparse would take for an option none of ``options``
    is, skipping the value each known option takes."""
    unknown: list[str] = []
    index = 0
    while index < len(words) and words[index] != "--":
        word = words[index]
        index += 1
        if not _is_option(word, options):
            continue
        if _known(word, options):
            index += _takes_next_word(word, options)
        else:
            unknown.append(word)
    return unknown


def _known(word: str, options: Mapping[str, Any]) -> bool:
    """An option of ``options``: itself, its ``=value`` form or ``-jN`` (the parser takes no
    abbreviation: cli/parser.py)."""
    name = word.split("=", 1)[0] if word.startswith("--") else word
    return name in options or word[:2] in options


def _is_option(word: str, options: Mapping[str, Any]) -> bool:
    """argparse's rule: an option string or its ``=value`` form (``-jN`` included); else a lone ``-``, a negative number or a word with a space is an operand,
    and any other word starting with ``-`` an unknown option."""
    if not word.startswith("-") or word == "-":
        return False
    if _known(word, options):
        return True
    return not (_NEGATIVE_NUMBER.match(word) or " " in word)


def _takes_next_word(word: str, options: Mapping[str, Any]) -> bool:
    """An option that takes one value and was not given it in the same word."""
    if "=" in word:
        return False
    return word in options and options[word].nargs is None
