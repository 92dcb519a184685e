"""Strict argument checks per capability (``schemas/capability_args.json``, docs/compatibility.md#capabilities).

``argument_problems(capability, args)`` lists every problem, ``field: problem`` per line,
before any provider is contacted: unknown capability, extra or missing arguments
(``additionalProperties: false``), types, lengths and patterns; then the rules a schema
cannot say: URLs a web provider would fetch must be public http(s) targets (the same rule
as a skill with ``network: ["*"]``), and raw GitHub URLs must be exactly raw.githubusercontent.com.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from splice_build.spec.untrusted_json import has_lone_surrogate, has_non_finite_number
from splice_build.spec.validation import SchemaValidator, compile_schema

# Problems listed in one INVALID_INPUT answer. The arguments come from a tool (up to 256 KiB):
# an array of 130,000 wrong items was as many problems, each rendered and then redacted in the
# host process, 24 s of its CPU for one call, which no tool timeout stops (docs/capabilities.md).
MAX_LISTED_PROBLEMS = 20
MORE_PROBLEMS = f"args: more than {MAX_LISTED_PROBLEMS} problems; the others are not listed"
# Characters of one problem: a message may quote the value (``[1, 1, 1, …] is too long``), and
# the value may be the whole 256 KiB, quoted, redacted and sent back for every call.
MAX_PROBLEM_CHARACTERS = 300

# Capabilities whose arguments hold URLs that a provider fetches on its side.
_TARGET_URL_ARGS: dict[str, str] = {
    "web.extract": "urls",
    "web.map": "url",
    "web.similar": "url",
}


@functools.cache
def _schema() -> SchemaValidator:
    return compile_schema("capability_args.json")


def known_capabilities() -> tuple[str, ...]:
    """Every capability with an argument schema, in the catalogue's order."""
    return tuple(_schema().schema["properties"]["capability"]["enum"])


def _urls(value: Any) -> Iterable[tuple[str, str]]:
    if isinstance(value, list):
        return ((f"[{i}]", item) for i, item in enumerate(value))
    return (("", value),)


@functools.cache
def _integer_arguments(capability: str) -> frozenset[str]:
    """The arguments of ``capability`` its schema types ``integer`` (all are top-level)."""
    definitions = _schema().schema["$defs"]
    found = set()
    for name, rule in definitions[capability].get("properties", {}).items():
        while "$ref" in rule:
            rule = definitions[rule["$ref"].rsplit("/", 1)[-1]]
        if rule.get("type") == "integer":
            found.add(name)
    return frozenset(found)


def provider_arguments(capability: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` (already free of problems) as providers are given them, and as the cache
    keys them:

    - an integer argument as a Python ``int``: JSON has one kind of number and the schema's
      ``integer`` takes ``100.0`` (an MCP client's JSON, a frame a tool wrote itself), which
      providers used as it came: ``text[:100.0]`` raised TypeError in all three web
      providers, each after its billed request, and ``limit=1.0`` went into query strings;
    - each target URL replaced by the WHATWG serialization that was checked: a provider
      parses the URL it is sent with its own parser, which reads
      ``http://a.example\\@169.254.169.254/`` as another host than the check did; the
      serialization reads the same to every parser."""
    out = {
        name: int(value) if name in _integer_arguments(capability) else value
        for name, value in args.items()
    }
    field = _TARGET_URL_ARGS.get(capability)
    if field is None:
        return out
    from splice_build.security.urls import parse_url

    value = out[field]
    out[field] = (
        [parse_url(url).href for url in value] if isinstance(value, list) else parse_url(value).href
    )
    return out


def _shortened(problem: str) -> str:
    if len(problem) <= MAX_PROBLEM_CHARACTERS:
        return problem
    return problem[: MAX_PROBLEM_CHARACTERS - 1] + "…"


def argument_problems(capability: str, args: Any) -> list[str]:
    """Every problem with ``args`` for ``capability`` (empty when the call may proceed)."""
    request = {"capability": capability, "args": args}
    if has_lone_surrogate(request):  # no UTF-8 form: neither a cache key nor a request body
        return ["args: a string holds an unpaired surrogate"]
    if has_non_finite_number(args):  # no JSON form, and NaN passes every bound of the schema
        return ["args: a number is NaN or infinite"]
    schema = _schema()
    found = schema.ordered(schema.check(request, limit=MAX_LISTED_PROBLEMS + 1))
    problems = [_shortened(p) for p in found[:MAX_LISTED_PROBLEMS]]
    if len(found) > MAX_LISTED_PROBLEMS:
        problems.append(MORE_PROBLEMS)
    if problems:
        return problems
    field = _TARGET_URL_ARGS.get(capability)
    if field is not None:
        from splice_build.broker.targets import target_problem

        for suffix, url in _urls(args[field]):
            problem = target_problem(url)
            if problem:
                problems.append(f"args.{field}{suffix}: {problem}")
    if capability == "github.raw":
        from splice_build.broker.providers.github import raw_url_problem

        problem = raw_url_problem(args["url"])
        if problem:
            problems.append(f"args.{problem}")
    return problems
