"""A boolean JSON Schema check of our schema files that needs no jsonschema import.

``FastCheck.accepts(instance)`` answers exactly what "``spec.validation``'s jsonschema
validator reports no error" answers, for the keywords our schemas use, with the same
semantics: jsonschema's Draft 2020-12 types and equality (``True`` is not ``1``, ``1.0`` is an
integer), stock ``patternProperties`` (Python ``re.search``), and our overrides —
``maxLength``/``minLength`` in UTF-16 code units, ECMAScript-like ``pattern``, ``nonBlank``,
``required``, ``additionalProperties`` (``patternProperties`` matched the JavaScript way) and
``format`` predicates applied to strings only. It never explains anything: a rejected
document goes to jsonschema for its messages. ``for_schema`` returns None for a schema with a
keyword this module does not know, and ``accepts`` answers False (→ jsonschema) if the
instance nests too deeply to check here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from splice_build.spec.paths import utf16_len

Predicate = Callable[[str], bool]

_ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "x-messages", "$defs", "default",
     "examples"}
)  # fmt: skip
_KEYWORDS = frozenset(
    {
        "type", "required", "properties", "patternProperties", "additionalProperties",
        "propertyNames", "maxProperties", "minProperties", "items", "minItems", "maxItems",
        "const", "enum", "minimum", "maximum", "maxLength", "minLength", "pattern", "nonBlank",
        "format", "$ref", "if", "then", "else",
    }
)  # fmt: skip
_SUBSCHEMA = ("additionalProperties", "propertyNames", "items", "if", "then", "else")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs")
_TRUE = object()  # stands for True in comparisons, so True != 1 (jsonschema's ``unbool``)
_FALSE = object()


def _is_type(instance: object, kind: str) -> bool:
    if kind == "object":
        return isinstance(instance, dict)
    if kind == "array":
        return isinstance(instance, list)
    if kind == "string":
        return isinstance(instance, str)
    if kind == "boolean":
        return isinstance(instance, bool)
    if kind == "null":
        return instance is None
    if isinstance(instance, bool):
        return False
    if kind == "number":
        return isinstance(instance, int | float)
    if kind == "integer":
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    return False


def _unbool(value: object) -> object:
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value


def json_equal(one: object, two: object) -> bool:
    """jsonschema's ``equal``: by value, booleans distinct from numbers, 1 == 1.0."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(json_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(json_equal(one[k], two[k]) for k in one)
    return _unbool(one) == _unbool(two)


def _supported(schema: Any) -> bool:
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, bool):
            continue
        if not isinstance(node, Mapping):
            return False
        for key, value in node.items():
            if key in _SUBSCHEMA:
                stack.append(value)
            elif key in _SUBSCHEMA_MAPS:
                if not isinstance(value, Mapping):
                    return False
                stack.extend(value.values())
            elif key == "$ref":
                if not (isinstance(value, str) and value.startswith("#/")):
                    return False
            elif key not in _KEYWORDS and key not in _ANNOTATIONS:
                return False
    return True


class FastCheck:
    """``accepts(instance)``: True exactly when jsonschema would report no error."""

    def __init__(
        self,
        root: Mapping[str, Any],
        formats: Mapping[str, Predicate],
        js_regex: Callable[[str], re.Pattern[str]],
        is_blank: Predicate,
    ) -> None:
        self._root = root
        self._formats = formats
        self._js_regex = js_regex
        self._is_blank = is_blank

    @classmethod
    def for_schema(
        cls,
        schema: Mapping[str, Any],
        formats: Mapping[str, Predicate],
        *,
        js_regex: Callable[[str], re.Pattern[str]],
        is_blank: Predicate,
    ) -> FastCheck | None:
        return cls(schema, formats, js_regex, is_blank) if _supported(schema) else None

    def accepts(self, instance: object) -> bool:
        try:
            return self._valid(self._root, instance)
        except RecursionError:
            return False  # jsonschema decides (and explains)

    def _resolve(self, ref: str) -> Any:
        node: Any = self._root
        for part in ref[2:].split("/"):
            node = node[part]
        return node

    def _valid(self, schema: Any, instance: Any) -> bool:
        if schema is True:
            return True
        if schema is False:
            return False
        for keyword, value in schema.items():
            check = _CHECKS.get(keyword)
            if check is not None and not check(self, value, instance, schema):
                return False
        return True

    # keywords: (self, keyword value, instance, whole schema) -> valid --------------------
    def _type(self, kinds: Any, instance: Any, schema: Any) -> bool:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        return any(_is_type(instance, kind) for kind in kinds)

    def _required(self, names: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, dict) or all(name in instance for name in names)

    def _properties(self, properties: Any, instance: Any, schema: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        return all(
            self._valid(sub, instance[name]) for name, sub in properties.items() if name in instance
        )

    def _pattern_properties(self, patterns: Any, instance: Any, schema: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        return all(
            self._valid(sub, value)
            for pattern, sub in patterns.items()
            for key, value in instance.items()
            if re.search(pattern, key)
        )

    def _additional(self, allowed: Any, instance: Any, schema: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        known = schema.get("properties", {})
        patterns = [self._js_regex(p) for p in schema.get("patternProperties", {})]
        for key, value in instance.items():
            if key in known or any(p.search(key) for p in patterns):
                continue
            if allowed is False:
                return False
            if isinstance(allowed, Mapping) and not self._valid(allowed, value):
                return False
        return True

    def _property_names(self, names: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, dict) or all(self._valid(names, key) for key in instance)

    def _max_properties(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, dict) or len(instance) <= limit

    def _min_properties(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, dict) or len(instance) >= limit

    def _items(self, items: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, list) or all(self._valid(items, item) for item in instance)

    def _min_items(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, list) or len(instance) >= limit

    def _max_items(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, list) or len(instance) <= limit

    def _const(self, value: Any, instance: Any, schema: Any) -> bool:
        return json_equal(instance, value)

    def _enum(self, values: Any, instance: Any, schema: Any) -> bool:
        return any(json_equal(value, instance) for value in values)

    def _minimum(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not _is_type(instance, "number") or instance >= limit

    def _maximum(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not _is_type(instance, "number") or instance <= limit

    def _max_length(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, str) or utf16_len(instance) <= limit

    def _min_length(self, limit: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, str) or utf16_len(instance) >= limit

    def _pattern(self, pattern: Any, instance: Any, schema: Any) -> bool:
        return not isinstance(instance, str) or self._js_regex(pattern).search(instance) is not None

    def _non_blank(self, enabled: Any, instance: Any, schema: Any) -> bool:
        return not (enabled and isinstance(instance, str) and self._is_blank(instance))

    def _format(self, name: Any, instance: Any, schema: Any) -> bool:
        predicate = self._formats.get(name)
        return predicate is None or not isinstance(instance, str) or bool(predicate(instance))

    def _ref(self, ref: Any, instance: Any, schema: Any) -> bool:
        return self._valid(self._resolve(ref), instance)

    def _if(self, condition: Any, instance: Any, schema: Any) -> bool:
        branch = "then" if self._valid(condition, instance) else "else"
        return branch not in schema or self._valid(schema[branch], instance)


_CHECKS: dict[str, Callable[[FastCheck, Any, Any, Any], bool]] = {
    "type": FastCheck._type,
    "required": FastCheck._required,
    "properties": FastCheck._properties,
    "patternProperties": FastCheck._pattern_properties,
    "additionalProperties": FastCheck._additional,
    "propertyNames": FastCheck._property_names,
    "maxProperties": FastCheck._max_properties,
    "minProperties": FastCheck._min_properties,
    "items": FastCheck._items,
    "minItems": FastCheck._min_items,
    "maxItems": FastCheck._max_items,
    "const": FastCheck._const,
    "enum": FastCheck._enum,
    "minimum": FastCheck._minimum,
    "maximum": FastCheck._maximum,
    "maxLength": FastCheck._max_length,
    "minLength": FastCheck._min_length,
    "pattern": FastCheck._pattern,
    "nonBlank": FastCheck._non_blank,
    "format": FastCheck._format,
    "$ref": FastCheck._ref,
    "if": FastCheck._if,
}
