"""JSON Schema validation of the files in ``splice_build/schemas/``, with JavaScript semantics.

The schemas say the structure; this module makes a compiled validator agree with the
TypeScript Splice where a stock validator would not, and turns its errors into the
``field: problem`` lines of docs/compatibility.md#manifest:

- ``maxLength`` / ``minLength`` count UTF-16 code units (JavaScript ``String.length``);
- ``pattern`` is ECMAScript-like: a final ``$`` matches only at the very end (Python's also
  matches before a trailing newline) and ``\\d``/``\\w`` are ASCII;
- ``nonBlank`` (our keyword) rejects strings that are empty after JavaScript's ``trim()``;
- ``required`` and ``additionalProperties: false`` report one error per property, at that
  property's path, in the instance's key order;
- ``format`` names are checked by predicates the owning module passes in (an unknown format in
  a schema is a bug, not a silent pass);
- ``x-messages`` (our annotation) maps a keyword, or ``*`` for any, to a message template
  using ``$path``, ``$parent``, ``$key``, ``$value``, ``$limit`` and caller variables.

When a field has a ``type``, ``required`` or ``nonBlank`` error, its other errors are dropped
(one clear message per field).
An array longer than its ``maxItems`` is that one error: its items are not checked one by one.

Speed: a valid document — nearly every one a command reads — is accepted by ``spec.fast_check``
(a small boolean interpreter of the same keywords, same semantics) without importing
jsonschema; jsonschema is imported and compiled only to explain an invalid document, so every
message still comes from one place. A schema using a keyword the fast check does not know is
always validated by jsonschema.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import resources
from typing import Any

from splice_build.records import dataclass
from splice_build.spec import json_text
from splice_build.spec.js_text import js_trim
from splice_build.spec.paths import utf16_len

PathElement = str | int
Predicate = Callable[[str], bool]

_SUPERSEDING = frozenset({"type", "required", "nonBlank"})


def is_blank(text: str) -> bool:
    return not js_trim(text)


def js_literal(value: object) -> str:
    """``JSON.stringify(value)`` for a message (integral floats print as integers)."""
    try:
        return json_text.stringify(value)
    except TypeError:
        return f"<{type(value).__name__}>"


def format_path(root: str, path: Iterable[PathElement]) -> str:
    """``root`` + ``.key`` / ``[index]`` steps, the way error messages name a field."""
    out = root
    for element in path:
        if isinstance(element, int):
            out += f"[{element}]"
        else:
            out = f"{out}.{element}" if out else element
    return out


@dataclass(frozen=True)
class Problem:
    """One rendered message and the instance path it is about (used to order messages)."""

    path: tuple[PathElement, ...]
    message: str


@functools.cache
def load_schema(filename: str) -> Mapping[str, Any]:
    """A schema from ``splice_build/schemas/`` (read once; treat the result as read-only)."""
    text = resources.files("splice_build").joinpath("schemas", filename).read_text("utf-8")
    return json.loads(text)


class SchemaValidator:
    """A compiled schema: ``check()`` an instance, then ``ordered()`` lines for people."""

    def __init__(self, schema: Mapping[str, Any], formats: Mapping[str, Predicate]) -> None:
        from splice_build.spec.fast_check import FastCheck

        self.schema = schema
        self._formats = dict(formats)
        self._fast = FastCheck.for_schema(
            schema, self._formats, js_regex=_js_regex, is_blank=is_blank
        )
        self._compiled: Any = None

    def _validator(self) -> Any:
        """The jsonschema validator, built (and jsonschema imported) on first need."""
        if self._compiled is None:
            from jsonschema import FormatChecker

            checker = FormatChecker(formats=())
            for name, predicate in self._formats.items():
                checker.checks(name)(_strings_only(predicate))
            self._compiled = _validator_class()(self.schema, format_checker=checker)
        return self._compiled

    def explain(
        self,
        instance: object,
        *,
        root: str = "",
        variables: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> list[Problem]:
        """``check`` without the fast path: always asks jsonschema (tests compare the two).

        ``limit``: stop after that many of jsonschema's errors. Its errors come one by one, so
        a caller that lists only the first few is not made to render (and walk) one error per
        item of an array a tool or a client filled with thousands of wrong values."""
        errors = itertools.islice(self._validator().iter_errors(_shallow_repr(instance)), limit)
        raw = [(tuple(error.absolute_path), error.validator, error) for error in errors]
        superseded = {path for path, keyword, _ in raw if keyword in _SUPERSEDING}
        problems = []
        for path, keyword, error in raw:
            if path in superseded and keyword not in _SUPERSEDING:
                continue
            problems.append(Problem(path, self._render(error, keyword, path, root, variables)))
        return problems

    def is_fast(self) -> bool:
        """Whether valid documents skip jsonschema (every keyword of the schema is known)."""
        return self._fast is not None

    def check(
        self,
        instance: object,
        *,
        root: str = "",
        variables: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> list[Problem]:
        """Every schema problem of ``instance`` (or those of the first ``limit`` errors, see
        ``explain``); paths in messages start at ``root``."""
        if self._fast is not None and self._fast.accepts(instance):
            return []
        return self.explain(instance, root=root, variables=variables, limit=limit)

    def ordered(self, problems: Iterable[Problem]) -> list[str]:
        """Messages in the schema's field order (stable otherwise), duplicates removed."""
        lines = [p.message for p in sorted(problems, key=lambda p: self._order_key(p.path))]
        return list(dict.fromkeys(lines))

    def _render(
        self,
        error: Any,
        keyword: str,
        path: tuple[PathElement, ...],
        root: str,
        variables: Mapping[str, str] | None,
    ) -> str:
        if keyword == "required":
            owner = self._resolve(error.schema.get("properties", {}).get(path[-1], {}))
        else:
            owner = error.schema
        messages = owner.get("x-messages", {}) if isinstance(owner, Mapping) else {}
        template = messages.get(keyword, messages.get("*"))
        where = format_path(root, path)
        if template is None:
            return f"{where}: {error.message}"
        values = _Values(
            {
                "path": lambda: where,
                "parent": lambda: format_path(root, path[:-1]),
                "key": lambda: str(path[-1]) if path else "",
                "value": lambda: js_literal(error.instance),
                "limit": lambda: js_literal(error.validator_value),
            },
            variables or {},
        )
        # Only a failed check formats a message: ``string`` (and its Template's pattern) is
        # not imported by every process that validates (a cold ``splice run``, ~0.4 ms).
        from string import Template

        return Template(template).substitute(values)

    def _resolve(self, schema: Any) -> Any:
        """Follow a local ``#/...`` reference (the only kind our schemas use)."""
        while isinstance(schema, Mapping) and str(schema.get("$ref", "")).startswith("#/"):
            node: Any = self.schema
            for part in schema["$ref"][2:].split("/"):
                node = node[part]
            schema = node
        return schema

    def _order_key(self, path: tuple[PathElement, ...]) -> tuple[int, ...]:
        key: list[int] = []
        node = self._resolve(self.schema)
        for element in path:
            if isinstance(element, int):
                key.append(element)
                node = self._resolve(node.get("items", {}) if isinstance(node, Mapping) else {})
                continue
            properties = node.get("properties", {}) if isinstance(node, Mapping) else {}
            names = list(properties)
            key.append(names.index(element) if element in names else -1)
            node = self._resolve(properties.get(element, {}))
        return tuple(key)


class _Values(Mapping[str, str]):
    """Template variables computed only when a message uses them (``$value`` may be huge)."""

    def __init__(self, lazy: Mapping[str, Callable[[], str]], fixed: Mapping[str, str]) -> None:
        self._lazy = lazy
        self._fixed = fixed

    def __getitem__(self, name: str) -> str:
        if name in self._fixed:
            return self._fixed[name]
        return self._lazy[name]()

    def __iter__(self) -> Iterator[str]:
        return iter({**self._lazy, **self._fixed})

    def __len__(self) -> int:
        return len({**self._lazy, **self._fixed})


class _DeepList(list[Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return "[...]"


class _DeepDict(dict[str, Any]):
    __slots__ = ()

    def __repr__(self) -> str:
        return "{...}"


# jsonschema writes repr(instance) into its messages, and repr recurses: containers this deep
# print as ``[...]``/``{...}`` so a document nested 100,000 levels gets messages, not a crash.
_REPR_DEPTH = 32


def _shallow_repr(instance: object) -> object:
    """A copy of ``instance`` (equal to it) whose containers below ``_REPR_DEPTH`` repr shortly."""
    return json_text.copy(instance, _repr_container)


def _repr_container(original: json_text.Container, depth: int) -> json_text.Container:
    deep = depth > _REPR_DEPTH
    if isinstance(original, dict):
        return _DeepDict() if deep else {}
    return _DeepList() if deep else []


def compile_schema(
    filename: str, *, formats: Mapping[str, Predicate] | None = None
) -> SchemaValidator:
    """Compile a schema file with our keywords and the given ``format`` predicates.

    Callers keep the result in a module-level cache; jsonschema is imported only when a
    document turns out to be invalid (see the module docstring).
    """
    formats = dict(formats or {})
    schema = load_schema(filename)
    missing = _format_names(schema) - formats.keys()
    assert not missing, f"BUG: {filename} uses formats without a predicate: {sorted(missing)}"
    return SchemaValidator(schema, formats)


def _strings_only(predicate: Predicate) -> Callable[[object], bool]:
    # A format says nothing about non-strings; ``type`` reports those.
    return lambda instance: not isinstance(instance, str) or predicate(instance)


def _format_names(schema: object) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("format"), str):
                found.add(node["format"])
            stack.extend(v for k, v in node.items() if k != "x-messages")
        elif isinstance(node, list):
            stack.extend(node)
    return found


@functools.cache
def _js_regex(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern, re.ASCII)


@functools.cache
def _validator_class() -> Any:
    from jsonschema import Draft202012Validator, ValidationError, validators

    def max_length(validator: Any, limit: int, instance: Any, schema: Any) -> Iterable[Any]:
        if validator.is_type(instance, "string") and utf16_len(instance) > limit:
            yield ValidationError(f"is longer than {limit} UTF-16 code units")

    def min_length(validator: Any, limit: int, instance: Any, schema: Any) -> Iterable[Any]:
        if validator.is_type(instance, "string") and utf16_len(instance) < limit:
            yield ValidationError(f"is shorter than {limit} UTF-16 code units")

    def pattern(validator: Any, regex: str, instance: Any, schema: Any) -> Iterable[Any]:
        if validator.is_type(instance, "string") and not _js_regex(regex).search(instance):
            yield ValidationError(f"does not match {regex!r}")

    def non_blank(validator: Any, enabled: bool, instance: Any, schema: Any) -> Iterable[Any]:
        if enabled and validator.is_type(instance, "string") and is_blank(instance):
            yield ValidationError("must not be blank")

    def required(validator: Any, names: list[str], instance: Any, schema: Any) -> Iterable[Any]:
        if validator.is_type(instance, "object"):
            for name in names:
                if name not in instance:
                    yield ValidationError("is required", path=[name])

    def additional(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterable[Any]:
        if not validator.is_type(instance, "object"):
            return
        known = schema.get("properties", {})
        patterns = [_js_regex(p) for p in schema.get("patternProperties", {})]
        for key in instance:
            if key in known or any(p.search(key) for p in patterns):
                continue
            if allowed is False:
                yield ValidationError("is not allowed", path=[key])
            elif isinstance(allowed, Mapping):
                yield from validator.descend(instance[key], allowed, path=key)

    def items(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterable[Any]:
        """An array longer than its ``maxItems`` is that one problem: its items are not
        checked one by one (the 130,000 items of a 256 KiB capability argument were walked
        after the array was already refused)."""
        most = schema.get("maxItems")
        if validator.is_type(instance, "array") and isinstance(most, int) and len(instance) > most:
            return
        yield from each_item(validator, allowed, instance, schema)

    each_item = Draft202012Validator.VALIDATORS["items"]

    return validators.extend(
        Draft202012Validator,
        {
            "items": items,
            "maxLength": max_length,
            "minLength": min_length,
            "pattern": pattern,
            "nonBlank": non_blank,
            "required": required,
            "additionalProperties": additional,
        },
    )
