"""Descriptor → MCP tool, and call outcome → MCP tool result (docs/compatibility.md#mcp).

The names, titles, annotations and ``_meta`` keys are the interface shared with the
TypeScript Splice: clients (and their permission prompts) read them, so they are exact.
A package's descriptions (the tool's, and each ``description`` in its schemas) are shown to
a person in the client's tool list and read by the model: a code point neither sees as a
glyph (a tag character U+E0041 spelling hidden instructions, a bidi override, a zero-width
space) is given as its visible escape, as in the terminal (docs/security.md#terminal-output).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from splice_build.mcp.interface import ToolOutcome
from splice_build.security.terminal import json_terminal_safe, one_line, terminal_safe
from splice_build.spec import json_text
from splice_build.spec.untrusted_json import json_strings

MAX_TOOL_NAME = 64  # MCP clients refuse longer tool names; such tools are skipped (6.2)
META_PREFIX = "io.spliceloom/"
# Keywords whose value is one subschema (spec/schema_subset.py; ``properties`` maps names to
# subschemas).
_SUBSCHEMA = frozenset({"items", "additionalProperties"})


class ToolWithheld(Exception):
    """A tool that is not listed; ``str()`` says why, in words safe to log."""


def annotations(permissions: Mapping[str, Any]) -> dict[str, bool]:
    """readOnly ⇔ no fs.write; destructive ⇔ fs.write; openWorld ⇔ network or capabilities."""
    fs = permissions.get("fs") or {}
    writes = bool(fs.get("write"))
    open_world = bool(permissions.get("network")) or bool(permissions.get("capabilities"))
    return {"readOnlyHint": not writes, "destructiveHint": writes, "openWorldHint": open_world}


def mcp_tool(descriptor: Mapping[str, Any], *, structured: bool) -> dict[str, Any]:
    """The ``tools/list`` entry for one tool descriptor; raises ``ToolWithheld`` when its
    name is too long or a schema holds a hidden code point outside a description.

    ``outputSchema`` is shown only to clients of protocol ≥ 2025-06-18 (``structured``) and
    only when it describes an object, because MCP requires object structured content. A
    descriptor with ``mcpTool`` (a tool of no package) is already mapped: only the name and
    version rules apply.
    """
    name = str(descriptor["mcpName"])
    if len(name) > MAX_TOOL_NAME:
        raise ToolWithheld(f"name longer than {MAX_TOOL_NAME}")
    ready = descriptor.get("mcpTool")
    if isinstance(ready, Mapping):
        return {key: value for key, value in ready.items() if structured or key != "outputSchema"}
    for key in ("inputSchema", "outputSchema"):
        hidden = _hidden_text(descriptor.get(key))
        if hidden is not None:
            raise ToolWithheld(
                f"its {key} holds a name, enum value or default that does not read as "
                f"written: {terminal_safe(hidden)[:80]}"
            )
    qualified = str(descriptor["qualifiedName"])
    version = str(descriptor["version"])
    permissions = descriptor.get("permissions") or {}
    tool: dict[str, Any] = {
        "name": name,
        "title": qualified,
        "description": (
            f"{terminal_safe(str(descriptor['description']))}\n\n"
            f"(Splice tool {qualified} v{version}; runs in the Splice sandbox.)"
        ),
        "inputSchema": _shown_schema(descriptor["inputSchema"]),
    }
    output_schema = descriptor.get("outputSchema")
    if structured and isinstance(output_schema, Mapping) and output_schema.get("type") == "object":
        tool["outputSchema"] = _shown_schema(output_schema, output=True)
    tool["annotations"] = {"title": qualified, **annotations(permissions)}
    tool["_meta"] = {
        f"{META_PREFIX}package": descriptor["package"],
        f"{META_PREFIX}version": version,
        f"{META_PREFIX}permissions": permissions,
        f"{META_PREFIX}timeoutMs": descriptor.get("timeoutMs", 10000),
    }
    return tool


def shown_document(text: str) -> str:
    """A package's document (SKILL.md) as a client shows it to a person and a model reads it,
    from an installed package (mcp/backend.py) or a registry's store (registry/mcp_backend.py):
    every code point no one sees as a glyph (tag characters spelling instructions, bidi
    overrides, zero-width spaces) as its visible escape; CRLF line ends read as newlines."""
    return terminal_safe(text.replace("\r\n", "\n"))


def _shown_schema(schema: Any, *, output: bool = False) -> Any:
    """``schema`` (a checked tool schema, at most 16 levels: spec/schema_subset.py) with the
    ``description`` of it and of each subschema made ``terminal_safe``; every other keyword
    (names, enums, defaults) stays exact.

    An ``output`` schema loses its ``minLength``: the runtime counts a string's length in
    UTF-16 units, as JavaScript does (spec/schema_subset.py), and a client's JSON Schema check
    counts code points, so it would refuse an output the runtime accepted ("\U0001f600" is 2
    units, 1 code point). ``maxLength`` stays: no string has more code points than units.
    """
    if not isinstance(schema, Mapping):
        return schema
    shown = {key: value for key, value in schema.items() if not (output and key == "minLength")}
    if isinstance(shown.get("description"), str):
        shown["description"] = terminal_safe(shown["description"])
    if isinstance(shown.get("properties"), Mapping):
        shown["properties"] = {
            name: _shown_schema(sub, output=output) for name, sub in shown["properties"].items()
        }
    for keyword in _SUBSCHEMA:
        if keyword in shown:
            shown[keyword] = _shown_schema(shown[keyword], output=output)
    return shown


def _hidden_text(schema: Any) -> str | None:
    """The first string of ``schema`` that ``terminal_safe`` would change, outside the
    ``description`` of a schema (those are shown escaped: ``_shown_schema``), or None.

    Every other string counts: property names, ``required`` entries, ``enum`` values and
    ``default`` values with their keys, at any depth (an explicit stack: a default may nest
    deeper than a schema).
    """
    schemas: list[Any] = [schema]
    values: list[Any] = []
    while schemas:
        node = schemas.pop()
        if not isinstance(node, Mapping):
            values.append(node)
            continue
        for keyword, value in node.items():
            values.append(keyword)
            if keyword == "description":
                continue
            if keyword == "properties" and isinstance(value, Mapping):
                values.extend(value)
                schemas.extend(value.values())
            elif keyword in _SUBSCHEMA:
                schemas.append(value)
            else:
                values.append(value)
    return next((text for text in json_strings(values) if terminal_safe(text) != text), None)


def error_text(
    code: str, message: str, details: Iterable[str] = (), hint: str | None = None
) -> str:
    """``CODE: message`` + ``\\n- detail`` lines + ``\\nhint: …``, each field redacted and
    then made ``one_line``: a tool's thrown message is someone else's text, and a newline in
    it would draw a ``hint:`` or ``- detail`` line that reads as Splice's own; a hidden code
    point is shown as its escape, as in the terminal."""
    from splice_build.security.redact import redact

    def shown(text: str) -> str:
        return one_line(redact(text))

    lines = [f"{code}: {shown(message)}", *(f"- {shown(detail)}" for detail in details)]
    if hint:
        lines.append(f"hint: {shown(hint)}")
    return "\n".join(lines)


def error_meta(error: Mapping[str, Any]) -> dict[str, Any]:
    """``_meta["io.spliceloom/error"]``: the failure's code, and the skill's own code when the
    runtime found one (``skillCode``), so a client can branch without parsing the text. The
    code is passed on only in its allow-listed shape (``is_skill_code``): fail closed."""
    from splice_build.runtime.result import is_skill_code

    structured: dict[str, Any] = {"code": str(error.get("code", "TOOL_ERROR"))}
    skill_code = error.get("skillCode")
    if is_skill_code(skill_code):
        structured["skillCode"] = skill_code
    return {f"{META_PREFIX}error": structured}


def error_result(
    code: str, message: str, details: Iterable[str] = (), hint: str | None = None
) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": error_text(code, message, details, hint)}],
        "_meta": error_meta({"code": code}),
        "isError": True,
    }


def tool_result(outcome: ToolOutcome, *, structured: bool) -> dict[str, Any]:
    """Success: pretty JSON text (hidden code points as JSON escapes); failure: ``CODE:
    message`` text (``error_text``) and isError.

    ``structuredContent`` is the output when it is a plain object (a failure has one only
    when its backend gave it); the outcome's ``notice`` precedes the text, ``meta`` is ``_meta``,
    to which a failure adds ``io.spliceloom/error`` (``error_meta``).
    """
    if outcome.ok:
        # The same JSON value, with each hidden code point as its JSON escape (``\\u202e``):
        # the person reading the result sees what the model reads. Indented unless that would
        # multiply it (``json_text.readable``), written at any depth.
        text = json_terminal_safe(json_text.readable(outcome.output))
    else:
        error = outcome.error or {}
        text = error_text(
            str(error.get("code", "TOOL_ERROR")),
            str(error.get("message", "")),
            [str(detail) for detail in error.get("details") or ()],
            str(error["hint"]) if error.get("hint") else None,
        )
    if outcome.notice:
        text = f"{outcome.notice}\n\n{text}"
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if structured and isinstance(outcome.output, dict):
        result["structuredContent"] = outcome.output
    meta = dict(outcome.meta or {})
    if not outcome.ok:
        meta.update(error_meta(outcome.error or {}))
    if meta:
        result["_meta"] = meta
    result["isError"] = not outcome.ok
    return result
