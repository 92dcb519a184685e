"""``tool_input``: a tool's input on its way to the sandbox (fuzz/README.md).

An MCP client's ``tools/call`` arguments, ``splice run --input`` and ``splice run key=value``
reach ``runtime.input_checks.input_as_sent`` and the schema check of the tool's manifest
(``spec.schema_subset.validate_value``) before any process starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

Check = Callable[[bytes], None]


def tool_input() -> Check:
    """A tool's input on its way to the sandbox: the first byte picks the input schema of one
    of the bundled skills' tools, the second how the input comes (an MCP client's arguments
    through the network-JSON decoder; ``splice run --input``; ``splice run key=value`` pairs,
    NUL-separated, coerced by the schema), then ``input_as_sent`` and the schema check the
    runtime runs before a process starts. ``USAGE`` from ``splice run``'s reading, then
    ``INVALID_INPUT`` or ``INPUT_TOO_LARGE``; what is sent is JSON that reads back as itself,
    and the schema check answers a list of problems."""
    from fuzz.targets import ROOT, Finding, _expect_codes
    from splice_build.cli.commands.run import build_input
    from splice_build.errors import SpliceError
    from splice_build.runtime.input_checks import input_as_sent
    from splice_build.spec.schema_subset import validate_value
    from splice_build.spec.untrusted_json import UntrustedJsonError, decode

    schemas = [
        tool["input"]
        for manifest in sorted((ROOT / "splice_build" / "skills").glob("*/manifest.json"))
        for tool in json.loads(manifest.read_text("utf-8"))["tools"]
    ]

    def value_of(how: int, raw: bytes, schema: Any) -> Any:
        if how == 0:
            return decode(raw, max_bytes=len(raw))
        text = raw.decode("utf-8", "surrogateescape")
        if how == 1:
            return build_input(text, [], schema)
        return build_input(None, text.split("\x00"), schema)

    def check(data: bytes) -> None:
        if len(data) < 2:
            return
        schema = schemas[data[0] % len(schemas)]
        try:
            value = value_of(data[1] % 3, data[2:], schema)
        except UntrustedJsonError:
            return  # the MCP request is answered -32700
        except SpliceError as exc:
            _expect_codes(exc, {"USAGE"})
            return
        sent, problem = input_as_sent(value)
        if problem is not None:
            if str(problem.code) not in ("INVALID_INPUT", "INPUT_TOO_LARGE"):
                raise Finding(f"input refused with {problem.code}: {problem.message}")
            return
        text = json.dumps(sent, allow_nan=False)
        if json.loads(text) != sent:
            raise Finding(f"the input sent does not read back as itself: {text[:200]}")
        problems = validate_value(schema, sent, "input")
        if not all(isinstance(p, str) for p in problems):
            raise Finding(f"schema check answered {problems!r:.200}")

    return check
