"""The fast check answers exactly what jsonschema answers, on thousands of mutated documents.

``SchemaValidator.check`` skips jsonschema when ``FastCheck`` accepts a document, so a fast
check more lenient than jsonschema would let an invalid manifest through: every mutant below
is judged by both, and they must agree.
"""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from typing import Any

import pytest

from splice_build.spec import manifest as manifest_module
from splice_build.spec import permissions as permissions_module
from splice_build.spec.fast_check import json_equal
from splice_build.spec.validation import SchemaValidator
from testing.manifests import manifest_dict, tool_dict

# Values that sit on the edges of the schemas' rules (types, lengths, patterns, formats).
ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, 1.0, 1.5, -1, 2**70, 60000, 60001, 1e300,
    "", " ", "\u3000", "\ufeff", "a", "A", "x" * 64, "x" * 65, "x" * 300, "\U0001f600" * 40,
    "1.0.0", "01.0.0", "^1.2.3", "latest", "*", "*.example.com", "example.com", "EXAMPLE.com",
    "../x", "./x", "/abs", "tools/x.mjs", "a\nb", "@ns/name", "@ns/Name", "ns", "web.search",
    "fs", "x-extra", [], [1], ["a"], ["a", "a"], ["@ns/other"], {}, {"a": 1}, {"type": "object"},
    {"read": ["."]}, {"type": "node", "minNodeVersion": "24.0.0"},
]  # fmt: skip
KEYS = ["x-ext", "zzz", "type", "read", "write", "minNodeVersion", "skills", "model"]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, (*prefix, index))
    return out


def _mutate(document: Any, rng: random.Random) -> Any:
    doc = copy.deepcopy(document)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(doc)[1:] or [()])
        if not path:
            break
        parent = doc
        for step in path[:-1]:
            parent = parent[step]
        last = path[-1]
        action = rng.random()
        if action < 0.55:
            parent[last] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif action < 0.7 and isinstance(parent, dict):
            del parent[last]
        elif action < 0.85 and isinstance(parent[last], dict):
            parent[last][rng.choice(KEYS)] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif isinstance(parent[last], list):
            parent[last].append(copy.deepcopy(rng.choice(ODD_VALUES)))
    return doc


def _seeds() -> list[dict[str, Any]]:
    rich = manifest_dict(
        permissions={
            "fs": {"read": ["data"], "write": ["out"]},
            "network": ["api.example.com", "*.example.org"],
            "env": ["API_KEY"],
            "capabilities": ["web.search"],
        },
        runtime={"type": "node", "minNodeVersion": "24.0.0"},
        license="MIT",
        homepage="https://example.com",
        dependencies={"@splice/other": "^1.0.0"},
        tools=[tool_dict(timeoutMs=5000), tool_dict(name="second")],
    )
    agent = manifest_dict(
        agent={"instructions": "Do it.", "skills": ["@splice/other"], "model": "any"}
    )
    return [manifest_dict(), rich, agent]


def _agree(validator: SchemaValidator, document: Any) -> tuple[bool, bool]:
    fast = validator._fast
    assert fast is not None
    return fast.accepts(document), not validator.explain(document, variables={"capabilities": ""})


@pytest.mark.parametrize("seed", range(4))
def test_manifest_schema_agrees_with_jsonschema(seed: int) -> None:
    validator = manifest_module._schema()
    rng = random.Random(seed)
    verdicts = {True: 0, False: 0}
    for base in _seeds():
        assert _agree(validator, base) == (True, True)
        for _ in range(400):
            mutant = _mutate(base, rng)
            fast, slow = _agree(validator, mutant)
            assert fast == slow, json.dumps(mutant)
            verdicts[slow] += 1
    assert verdicts[True] > 100 and verdicts[False] > 100  # both sides were exercised


@pytest.mark.parametrize("seed", range(2))
def test_permissions_schema_agrees_with_jsonschema(seed: int) -> None:
    validator = permissions_module._schema()
    rng = random.Random(100 + seed)
    base = _seeds()[1]["permissions"]
    verdicts = {True: 0, False: 0}
    for _ in range(800):
        wrapped = _mutate({"p": base}, rng)
        mutant = wrapped.get("p", {}) if rng.random() < 0.9 else rng.choice(ODD_VALUES)
        fast, slow = _agree(validator, mutant)
        assert fast == slow, json.dumps(mutant)
        verdicts[slow] += 1
    assert verdicts[True] > 50 and verdicts[False] > 50


def test_our_schemas_take_the_fast_path() -> None:
    assert manifest_module._schema().is_fast()
    assert permissions_module._schema().is_fast()


def test_json_equal_is_jsonschemas() -> None:
    from jsonschema._utils import equal

    values = [True, False, 1, 1.0, 0, 0.0, "1", None, [1], [True], {"a": 1}, {"a": True}]
    for a in values:
        for b in values:
            assert json_equal(a, b) == equal(a, b), (a, b)


def test_a_valid_manifest_never_imports_jsonschema_and_an_invalid_one_still_explains() -> None:
    code = (
        "import sys, json\n"
        "from splice_build.spec.manifest import Manifest\n"
        "from testing.manifests import manifest_dict\n"
        "Manifest.from_dict(manifest_dict())\n"
        "print('jsonschema' in sys.modules)\n"
        "try:\n"
        "    Manifest.from_dict(manifest_dict(version='x'))\n"
        "except Exception as exc:\n"
        "    print(exc.details)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second = done.stdout.splitlines()
    assert first == "False"
    assert "version" in second
