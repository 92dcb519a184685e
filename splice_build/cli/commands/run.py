"""`splice run <pkg>.<tool> [key=value…] [--input JSON] [--dir PATH]`: run one tool.

With ``--dir`` the package directory is run as it is (what a skill author does while
writing one). Otherwise the tool of an installed package is resolved in the project and its
files are re-verified from bytes (and its grant checked) before any code runs
(``INSTALLED_PACKAGE_MODIFIED``, ``PERMISSIONS_NOT_GRANTED``, ``NOT_INSTALLED``,
``AMBIGUOUS_TOOL``). Input coercion follows docs/compatibility.md#cli (run row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from splice_build.cli import arg_types
from splice_build.cli.plain import parsed, split_command
from splice_build.errors import ErrorCode, SandboxError, SpecError, UsageError

if TYPE_CHECKING:
    import argparse
    from pathlib import Path
    from types import SimpleNamespace

    from splice_build.cli.context import CommandContext
    from splice_build.runtime import LoadedPackage, ToolResult
    from splice_build.spec.names import ToolRef

NAME = "run"
HELP = "run a tool of a package: splice run [--dir PATH] <pkg>.<tool> [key=value...]"
NEEDS_PROJECT = False


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "tool_ref",
        type=arg_types.tool_ref,
        metavar="<pkg>.<tool>",
        help="e.g. example.hello (`splice info @ns/name` lists a package's tools and inputs)",
    )
    # Pairs before or after any option (``--input J a=1`` as ``a=1 --input J``): cli/operands.py.
    parser.add_argument("pairs", nargs="*", metavar="key=value", help="input properties")
    parser.add_argument("--input", dest="input_json", metavar="JSON", help="input object")
    parser.add_argument(
        "--dir",
        dest="package_dir",
        metavar="PATH",
        type=arg_types.path,
        help="run a package directory",
    )


def plain_args(argv: Sequence[str]) -> SimpleNamespace | None:
    """What the parser makes of ``[flags] run <pkg>.<tool> [key=value…]`` when that is
    certain (cli/plain.py): no word after ``run`` begins with ``-`` (an option, ``--``, or
    a word argparse may take for one), the reference parses and every pair is UTF-8 text, as
    the parser's checks require. Else None: the parser answers, or says what is wrong."""
    split = split_command(argv)
    if split is None:
        return None
    flags, command, words = split
    if command != NAME or not words or any(word.startswith("-") for word in words):
        return None
    try:
        arg_types.tool_ref(words[0])
    except SpecError:
        return None
    if not all(arg_types.is_text(word) for word in words[1:]):
        return None
    return parsed(
        flags, NAME, tool_ref=words[0], pairs=words[1:], input_json=None, package_dir=None
    )


def _number(text: str) -> float | int | None:
    """``Number(text)`` when the text is not blank and the number finite, else None."""
    import math

    from splice_build.spec.js_number import js_number
    from splice_build.spec.validation import is_blank

    value = js_number(text)
    if is_blank(text) or not math.isfinite(value):
        return None
    return int(value) if value.is_integer() and abs(value) <= 2**53 else value


def _json(text: str) -> Any:
    """The JSON value of command-line text, read as ``splice mcp`` reads a request
    (spec/untrusted_json.py: no ``NaN``, finite numbers of at most 100 characters), at any
    depth without recursion: the runtime refuses input nested deeper than 256 levels
    (``INPUT_TOO_LARGE``), as for the SDK and MCP. ``UntrustedJsonError`` (a ``ValueError``)
    when it is not JSON; a lone surrogate escape is kept, for the runtime to refuse."""
    from splice_build.spec.untrusted_json import decode

    data = text.encode("utf-8", "surrogatepass")
    return decode(data, max_bytes=len(data), max_depth=len(data), lone_surrogates=True)


def _coerce(raw: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "string":
        return raw
    if kind in ("number", "integer"):
        number = _number(raw)
        return raw if number is None else number
    if kind == "boolean":
        return {"true": True, "false": False}.get(raw, raw)
    try:
        return _json(raw)
    except ValueError:
        return raw


def build_input(input_json: str | None, pairs: list[str], schema: Any) -> dict[str, Any]:
    """``--input`` object first, then ``key=value`` pairs coerced by the property schema."""
    value: dict[str, Any] = {}
    if input_json is not None:
        try:
            parsed = _json(input_json)
        except ValueError as exc:
            from json import JSONDecodeError  # loaded with the decoder

            # The decoder's own error says where ("… line 1 column 12 (char 11)").
            where = exc.__cause__ if isinstance(exc.__cause__, JSONDecodeError) else exc
            raise UsageError(f"--input is not valid JSON: {where}") from exc
        if not isinstance(parsed, dict):
            raise UsageError("--input must be a JSON object")
        value.update(parsed)
    properties = schema.get("properties", {}) if isinstance(schema, dict) else {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"Invalid argument {pair!r}: expected key=value")
        value[key] = _coerce(raw, properties.get(key))
    return value


def _project_root(ctx: CommandContext) -> Path:
    from splice_build.errors import ProjectError
    from splice_build.project.project_file import find_project_root

    try:
        return find_project_root(ctx.cwd)
    except ProjectError:
        return ctx.cwd


def _check_ref_matches(ref: ToolRef, pkg: LoadedPackage) -> None:
    if ref.package not in (pkg.id, pkg.manifest.name):
        raise SandboxError(
            ErrorCode.NOT_INSTALLED,
            f"{ref.package} does not match the package in the directory ({pkg.id})",
            hint=f"Name the directory's package: {pkg.manifest.name}.{ref.tool} "
            f"(or {pkg.id}.{ref.tool}).",
        )


def _run_directory(args: argparse.Namespace, ctx: CommandContext) -> tuple[str, ToolResult]:
    from splice_build.runtime import SpliceRuntime
    from splice_build.spec.names import ToolRef

    ref = ToolRef.parse(args.tool_ref)
    runtime = SpliceRuntime(project_root=_project_root(ctx), env=ctx.env)
    directory = ctx.cwd / args.package_dir
    try:
        pkg = runtime.load(directory)
    except SandboxError as exc:  # the loader's words name no path: say which, and what next
        if exc.code is not ErrorCode.INVALID_PACKAGE:
            raise
        validate = f"`splice validate {directory}` lists every problem of the package"
        raise SandboxError(
            exc.code,
            f"{exc.message} ({directory})",
            details=exc.details,
            hint=exc.hint or (validate if directory.is_dir() else None),
        ) from exc
    _check_ref_matches(ref, pkg)
    tool = pkg.manifest.tool(ref.tool)
    schema = tool.input if tool is not None else {}
    result = runtime.execute(pkg, ref.tool, build_input(args.input_json, args.pairs, schema))
    return f"{pkg.id}.{ref.tool}", result


def _start_machine_probes(ctx: CommandContext) -> None:
    """Start what the sandbox set-up asks of the machine (the isolation probes, the loader's
    listing of Node's files) before the package is verified from bytes, so that those child
    processes work while the parent hashes. Nothing is trusted or skipped: the set-up
    collects the same answers it would have asked for, and meets any failure itself."""
    from splice_build.errors import SpliceError
    from splice_build.runtime.isolation.fileview import prefetch_node_files
    from splice_build.runtime.isolation.plan import configured_mode
    from splice_build.runtime.isolation.support import prefetch
    from splice_build.runtime.node import find_node

    prefetch()
    try:
        if configured_mode(ctx.env) != "in-process":
            prefetch_node_files(find_node(ctx.env).path)
    except (OSError, SpliceError):
        return  # the sandbox set-up reports it in its place


def _run_installed(args: argparse.Namespace, ctx: CommandContext) -> tuple[str, ToolResult]:
    from splice_build.cli.commands.add import warn_of_unknown_keys
    from splice_build.project.project_file import find_project_root
    from splice_build.sdk import Splice

    _start_machine_probes(ctx)

    root = find_project_root(ctx.cwd)
    warn_of_unknown_keys(ctx, root)
    splice = Splice(root, registry=ctx.registry, env=ctx.env, home=ctx.home, hints="cli")
    pkg, tool_name = splice.resolve_tool(args.tool_ref)
    tool = pkg.manifest.tool(tool_name)
    schema = tool.input if tool is not None else {}
    payload = build_input(args.input_json, args.pairs, schema)
    return f"{pkg.id}.{tool_name}", splice.run_resolved(pkg, tool_name, payload)


def run(args: argparse.Namespace, ctx: CommandContext) -> int:
    from splice_build.cli.output import json_for_people

    if args.package_dir is None:
        label, result = _run_installed(args, ctx)
    else:
        label, result = _run_directory(args, ctx)
    if not ctx.json and result.logs:
        ctx.out.info_lines(f"[{label}] {line}" for line in result.logs.splitlines())
    envelope = result.to_json()
    if result.ok:
        # The output as JSON that parses to it (scripts read it): a code point a terminal
        # would act on or hide as its JSON escape, not as the ``\x9b`` of text for people.
        ctx.out.result(envelope, lambda _: json_for_people(result.output))
        return 0
    if ctx.json:
        ctx.out.result(envelope)
    else:
        assert result.error is not None, "BUG: failed result without error"
        error = result.error
        hint = error.hint
        if hint is None and error.code is ErrorCode.INVALID_INPUT and args.package_dir is None:
            # the details say what was wrong, not what the tool takes (the help's pointer)
            package_id, tool = label.rsplit(".", 1)
            hint = f"`splice info {package_id}` lists the inputs of {tool} and the other tools."
        ctx.out.error(error.message, error.details, hint, code=str(error.code))
    return 1
