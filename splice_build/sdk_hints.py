"""What an error's hint says to a Python caller: the SDK call beside each ``splice`` command.

Hints are written once, where each error is raised, naming the command to run next
(```splice install```, ```splice add @acme/x@<version>```). A program calling the SDK has
no command line at hand, so ``Splice`` (sdk.py) passes each hint of an error leaving it
through :func:`said_to_the_sdk`, which adds the call that does the same after each command
it knows: "Run `splice install` (Python SDK: `Splice.install()`) to restore the verified
copy." A flag named outside a command ("re-run with --accept-permissions") gets its keyword
the same way. The CLI and the MCP server (``Splice(hints="cli")``) keep the hint as written.
"""

from __future__ import annotations

import re

from splice_build.errors import SpliceError

# The commands a hint names that the SDK does too, with how the command's operands (package
# ids, with a version or range; a directory) are passed; each flag maps to a keyword.
_CALLS = {
    "add": ("Splice.add", "list"),
    "install": ("Splice.install", None),
    "remove": ("Splice.remove", "list"),
    "update": ("Splice.update", "list"),
    "list": ("Splice.list", None),
    "verify": ("Splice.verify", "one"),
    "init": ("Splice.init", "one"),
}
_FLAGS = {
    "--accept-permissions": "accept_permissions=True",
    "--allow-signer-change": "allow_signer_change=True",
    "--frozen": "frozen=True",
}
_COMMAND = re.compile(r"`splice ([a-z]+)((?: [^`\s]+)*)`")
_FLAG = re.compile(r"(?<![\w-])--[a-z-]+(?![\w-])")  # "re-run with --accept-permissions."
_SAID = " (Python SDK: `"


def said_to_the_sdk(error: SpliceError) -> None:
    """Add the SDK call after each command ``error``'s hint names, and the keyword after each
    flag it names outside a command (once per error)."""
    if error.hint and _SAID not in error.hint:
        parts = _COMMAND.sub(_with_call, error.hint).split("`")
        parts[::2] = [_FLAG.sub(_with_keyword, outside) for outside in parts[::2]]
        error.hint = "`".join(parts)


def _with_keyword(found: re.Match[str]) -> str:
    """The flag found, then the SDK's keyword for it (none for a flag the SDK has none for)."""
    keyword = _FLAGS.get(found.group(0))
    return found.group(0) if keyword is None else f"{found.group(0)}{_SAID}{keyword}`)"


def _with_call(found: re.Match[str]) -> str:
    """The command found, then the SDK call doing the same (none for a command or a flag
    the SDK has no call or keyword for)."""
    command, words = found.group(1), found.group(2).split()
    if command not in _CALLS or any(w.startswith("-") and w not in _FLAGS for w in words):
        return found.group(0)
    function, operands = _CALLS[command]
    given = [f'"{w}"' for w in words if not w.startswith("-")]
    if (operands is None and given) or (operands == "one" and len(given) > 1):
        return found.group(0)
    if operands == "one":
        given = given or ['"."']
    elif operands == "list" and (given or command != "update"):
        given = [f"[{', '.join(given)}]"]
    arguments = ", ".join([*given, *(_FLAGS[w] for w in words if w in _FLAGS)])
    return f"{found.group(0)}{_SAID}{function}({arguments})`)"
