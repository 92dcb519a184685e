"""argparse ``type=`` checks for package and tool references (and a few other values).

A malformed reference is a usage error (exit 2) found while the command line is parsed, before
a project is looked up or a registry is asked, as the TypeScript CLI reports it. Each check
raises the parser's own ``SpecError`` (``INVALID_NAME``, ``INVALID_RANGE``, ``INVALID_REF``),
which the error handler prints, and returns the text unchanged for the command to use.
Imports happen inside the checks so that loading a command module stays cheap.

Text arguments hold undecodable bytes of the command line as surrogates (``\xff`` arrives as
``\udcff``). A file-system path may (``path``: the operating system takes the bytes back);
anything else must be UTF-8 text (``text``), which ``main.build_parser`` gives every string
argument that declares no other type, so a name, query or label with such bytes is a usage
error here rather than a ``UnicodeEncodeError`` where it is sent or written.
"""

from __future__ import annotations

from typing import Any


def package_ref(text: str) -> str:
    """``@ns/name`` or ``@ns/name@<range>``."""
    from splice_build.spec.names import PackageRef

    PackageRef.parse(text)
    return text


def package_id(text: str) -> str:
    """``@ns/name``."""
    from splice_build.spec.names import PackageId

    PackageId.parse(text)
    return text


def tool_ref(text: str) -> str:
    """``<package>.<tool>`` (``example.hello`` or ``@splice/example.hello``)."""
    from splice_build.spec.names import ToolRef

    ToolRef.parse(text)
    return text


def namespace(text: str) -> str:
    """A namespace, written ``acme`` or ``@acme``."""
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.names import is_valid_name

    if not is_valid_name(text.removeprefix("@")):
        raise SpecError(
            ErrorCode.INVALID_NAME,
            f'Invalid namespace "{text}". '
            "A namespace may only contain lowercase letters, digits and dashes.",
        )
    return text


def path(value: str) -> str:
    """A file-system path: any bytes the operating system accepts (returned unchanged)."""
    return value


def is_text(value: str) -> bool:
    """``value`` holds none of the surrogates that stand for undecodable command-line bytes."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(value: str) -> str:
    """UTF-8 text: refuses the surrogates that stand for undecodable command-line bytes."""
    if not is_text(value):
        import argparse

        shown = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise argparse.ArgumentTypeError(f'"{shown}" is not valid UTF-8 text')
    return value


def trusted_proxy(text: str) -> Any:
    """``ADDR[/BITS]`` of ``--trusted-proxy`` (registry serve, mcp --http): an IP network."""
    import argparse

    from splice_build.client_address import parse_trusted_proxy

    try:
        return parse_trusted_proxy(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"--trusted-proxy needs an IP address or CIDR network, not {text!r}: {exc}"
        ) from exc
