"""argparse ``type=`` checks for package and tool references, numbers and a few other values.

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
    """``@ns/name`` or ``@ns/name@<range>`` (a mistyped name's hint: sdk_args.named)."""
    from splice_build.sdk_args import named
    from splice_build.spec.names import PackageRef

    named(PackageRef.parse, text)
    return text


def package_id(text: str) -> str:
    """``@ns/name``."""
    from splice_build.sdk_args import named
    from splice_build.spec.names import PackageId

    named(PackageId.parse, text)
    return text


def project_package_id(text: str) -> str:
    """``@ns/name`` of a package the project has (``remove``, ``outdated``, ``update``): a
    bare ``files`` that is the name of exactly one package of the project's ``splice.json``
    gets that package as hint (``Did you mean @splice/files?``), not the search for it that
    any other bare name gets (``splice run files.read`` takes the short name, and ``splice
    remove files`` sent to ``splice search files``)."""
    from splice_build.errors import ErrorCode, SpecError

    try:
        return package_id(text)
    except SpecError as exc:
        whole = _project_package_named(text) if exc.code is ErrorCode.INVALID_NAME else None
        if whole is None:
            raise
        hint = f"Did you mean {whole}?"
        raise SpecError(exc.code, exc.message, details=exc.details, hint=hint) from None


def _project_package_named(name: str) -> str | None:
    """The one package of the project found from the working directory whose name part is
    ``name``; None when there is no such project, none or several."""
    from pathlib import Path

    from splice_build.errors import SpliceError
    from splice_build.project.project_file import find_project_root, load_project_file
    from splice_build.spec.names import is_valid_name

    if not is_valid_name(name):
        return None
    try:
        packages = load_project_file(find_project_root(Path.cwd())).packages
    except (SpliceError, OSError):  # no project here, or none this hint may read
        return None
    found = [package for package in packages if package.rsplit("/", 1)[-1] == name]
    return found[0] if len(found) == 1 else None


def tool_ref(text: str) -> str:
    """``<package>.<tool>`` (``example.hello`` or ``@splice/example.hello``). A word with no
    dot that names a tool the way MCP or a manifest does (``splice_example_hello``,
    ``hello``) gets the hint of how to write it here: the message alone left a user who had
    the name from ``splice mcp`` guessing."""
    from splice_build.errors import SpecError
    from splice_build.spec.names import ToolRef

    try:
        ToolRef.parse(text)
    except SpecError as exc:
        hint = None if "." in text or exc.hint else _tool_ref_hint(text)
        if hint is None:
            raise
        raise SpecError(exc.code, exc.message, details=exc.details, hint=hint) from None
    return text


def _tool_ref_hint(text: str) -> str | None:
    from splice_build.spec.names import is_valid_name, is_valid_package_id, is_valid_tool_name
    from splice_build.spec.tools import split_mcp_tool_name

    named = split_mcp_tool_name(text)
    if named is not None:
        package, tool = named
        if is_valid_package_id(package) and is_valid_tool_name(tool):
            name = package.rsplit("/", 1)[-1]
            return f"That is an MCP tool name; here it is {name}.{tool} (or {package}.{tool})."
    package, _, tool = text.partition("_")  # names hold no "_": files_write is files.write
    if tool and is_valid_name(package) and is_valid_tool_name(tool):
        return f"Did you mean {package}.{tool}?"
    if is_valid_tool_name(text):
        owner = _installed_package_with_tool(text)
        if owner is not None:
            return f"Did you mean {owner}.{text}?"
        return f"Name its package too: <package>.{text} (`splice list` shows the project's)."
    return None


def _installed_package_with_tool(tool: str) -> str | None:
    """How to name the one package installed in the project found from the working directory
    whose manifest has ``tool`` (its short name, unless another locked package shares it);
    None when there is no such project, or none or several packages have the tool. Reads the
    installed manifests, on this error only; nothing is verified or recovered."""
    from pathlib import Path

    from splice_build.errors import SpliceError
    from splice_build.install.installed import read_installed_manifest
    from splice_build.project.layout import ProjectLayout
    from splice_build.project.lockfile import load_lockfile
    from splice_build.project.project_file import find_project_root

    try:
        root = find_project_root(Path.cwd())
        ids = list(load_lockfile(root).packages)
    except (SpliceError, OSError):  # no project here, or none this hint may read
        return None
    layout = ProjectLayout(root)
    owners = []
    for package in ids:
        try:
            manifest = read_installed_manifest(layout.package_dir(package))
        except (SpliceError, OSError):
            continue
        if any(t.name == tool for t in manifest.tools):
            owners.append(package)
    if len(owners) != 1:
        return None
    short = owners[0].rsplit("/", 1)[-1]
    return short if [i.rsplit("/", 1)[-1] for i in ids].count(short) == 1 else owners[0]


def namespace(text: str, what: str = "namespace") -> str:
    """A namespace, written ``acme`` or ``@acme``; ``what``: the name it is."""
    from splice_build.errors import ErrorCode, SpecError
    from splice_build.spec.names import is_valid_name

    if not is_valid_name(text.removeprefix("@")):
        raise SpecError(
            ErrorCode.INVALID_NAME,
            f'Invalid {what} "{text}". '
            f"A {what} may only contain lowercase letters, digits and dashes.",
        )
    return text


def user_name(text: str) -> str:
    """A registry's user name: the namespace rule (registry/service/fields.py)."""
    return namespace(text, "user name")


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

        raise argparse.ArgumentTypeError(f"{shown(value)} is not valid UTF-8 text")
    return value


def shown(value: str) -> str:
    """A typed value quoted in a message: its first 40 characters on one line, every code point
    a terminal would act on or hide made visible (security/terminal.py ``one_line``)."""
    from splice_build.security.terminal import one_line

    head = one_line(value[:40])
    return f'"{head}…"' if len(value) > 40 else f'"{head}"'


def refusal(option: str, wanted: str, value: str) -> Exception:
    """The ``argparse.ArgumentTypeError`` of a flag's value: the option, what it takes, and the
    value as typed, shown safely (argparse adds ``argument OPTION:`` before it)."""
    import argparse

    return argparse.ArgumentTypeError(f"{option} must be {wanted}, not {shown(value)}")


def whole_number(value: str, option: str, low: int, high: int, wanted: str = "") -> int:
    """A flag's integer from ``low`` to ``high``: ASCII digits only, no more of them than
    ``high`` has (spec/number_text.py), else the flag's usage error (``wanted`` says what
    the flag takes when the range alone does not)."""
    from splice_build.spec.number_text import whole_number as read

    number = read(value, len(str(high)))
    if number is None or not low <= number <= high:
        raise refusal(option, wanted or f"an integer from {low} to {high}", value)
    return number


def numeric(option: str, low: int, high: int, wanted: str = "") -> Any:
    """The ``type=`` of a flag taking an integer from ``low`` to ``high``."""

    def check(value: str) -> int:
        return whole_number(value, option, low, high, wanted)

    return check


def days(value: str) -> int:
    """``--expires N`` or ``Nd`` (token create, registry admin create-token): 1 to 365 days."""
    from splice_build.spec.number_text import whole_number as read

    number = read(value.removesuffix("d"), 3)
    if number is None or not 1 <= number <= 365:
        raise refusal("--expires", "N or Nd with N from 1 to 365", value)
    return number


def trusted_proxy(text: str) -> Any:
    """``ADDR[/BITS]`` of ``--trusted-proxy`` (registry serve, mcp --http): an IP network."""

    from splice_build.client_address import parse_trusted_proxy

    try:
        return parse_trusted_proxy(text)
    except ValueError as exc:
        raise refusal("--trusted-proxy", "an IP address or CIDR network", text) from exc
