"""Checks that a provider's refusal of a vendor's answer names a value the answer really holds.

``broker/providers/answer_reader.py`` refuses a value of another type with
``<provider> <METHOD> <template>: <path> is not <type>``; ``misnamed`` reads that path in the
answer that was served and says whether the refusal is wrong about it (nothing there, or a
value of the very type it says is missing). Used by the walk of every capability
(tests/broker/test_answer_shape.py) and the ``provider_answers`` fuzz target.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

SHAPE_REFUSAL = re.compile(
    r"(?P<where>[a-z]+ (GET|POST) \S+): (?P<path>the answer|[\w.\[\]]+) is not "
    r"(?P<type>an object|a list|a string|a number|a boolean|a JSON-RPC batch)"
)
_TYPES: dict[str, Any] = {
    "an object": Mapping,
    "a list": list,
    "a JSON-RPC batch": list,
    "a string": str,
    "a number": (int, float),
    "a boolean": bool,
}


def value_at(answer: Any, path: str) -> Any:
    """The value at ``path`` (``results[3].url``, ``the answer``); ``None`` where there is none."""
    if path == "the answer":
        return answer
    for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        if index and isinstance(answer, list) and int(index) < len(answer):
            answer = answer[int(index)]
        elif key and isinstance(answer, Mapping):
            answer = answer.get(key)
        else:
            return None
    return answer


def misnamed(refusal: re.Match[str], answer: Any) -> bool:
    """Whether the refusal names a path holding nothing (``null``) or a value of the type it
    says is not there (a boolean is no number, though Python's bool is an int)."""
    found = value_at(answer, refusal["path"])
    if found is None:
        return True
    if isinstance(found, bool) and refusal["type"] == "a number":
        return False
    return isinstance(found, _TYPES[refusal["type"]])
