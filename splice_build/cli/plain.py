"""Command lines whose parse is certain without argparse (issue #22).

Importing argparse and building even one command's parser costs a short command about 4 ms,
more than a no-op ``sync`` spends on its own work and about a sixth of a bare Node start
next to ``splice run``. A command may answer the shapes it can read with certainty itself
(``sync.plain_check``, and ``plain_args`` of ``run`` and ``install``); every other command line goes through the
parser, which then gives the same answer, or the same error.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace

# The global options that take no value: the word after one can only be the command
# (``--registry`` takes a value, and argparse accepts any unambiguous prefix of an option).
VALUELESS_GLOBAL_FLAGS = frozenset({"--json", "--no-color", "--verbose"})


def split_command(argv: Sequence[str]) -> tuple[frozenset[str], str, list[str]] | None:
    """``(global flags, command, the words after it)`` when every word before the command is
    a value-less global flag, each at most once; else None."""
    for at, word in enumerate(argv):
        if word not in VALUELESS_GLOBAL_FLAGS:
            flags = argv[:at]
            if word.startswith("-") or len(set(flags)) != len(flags):
                return None
            return frozenset(flags), word, list(argv[at + 1 :])
    return None


def parsed(flags: frozenset[str], command: str, **arguments: object) -> SimpleNamespace:
    """The namespace the parser gives ``command`` with its ``arguments`` after the value-less
    global ``flags`` (and no ``--registry``)."""
    return SimpleNamespace(
        json="--json" in flags,
        registry=None,
        no_color="--no-color" in flags,
        verbose="--verbose" in flags,
        command=command,
        **arguments,
    )
