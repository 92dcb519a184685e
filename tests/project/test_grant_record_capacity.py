"""The lists a manifest may declare (schemas/*.json ``maxItems``) against what each consumer
downstream holds of them (docs/packages.md#permissions).

The record of write grants (project/grant_record.py) held 512 entries and 256 KiB while a
manifest may list 1,000 write paths: such a package installed, then never ran. Every list
of every schema is walked here, from the files themselves: each names the count bound of
the consumer it reaches (at least the schema's), or why none bounds it by count. A list
added to a schema without saying which fails here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any

from splice_build.project import grant_record
from splice_build.spec.paths import MAX_RELATIVE_PATH


def _record_capacity() -> int:
    return grant_record.max_entries()


# (schema file, list) → the count bound of what the list reaches downstream, or why none
# (a str). Node's command line bounds the file lists by bytes, not count: the runtime says
# so before anything is made (runtime/runtime.py ``_refuse_long_command_line``).
CONSUMERS: dict[tuple[str, str], Callable[[], int] | str] = {
    ("permissions.schema.json", "properties/fs/properties/read"): "Node's command line, the "
    "file view's binds and the consent record (a file of project state's bytes): no count",
    ("permissions.schema.json", "properties/fs/properties/write"): _record_capacity,
    ("permissions.schema.json", "properties/network"): "the fetch guard matches each host: "
    "no count",
    ("permissions.schema.json", "properties/env"): "the job's env, values the caller's: no count",
    ("permissions.schema.json", "properties/capabilities"): "the broker's catalogue: fewer "
    "names than the bound, each once",
    **{
        ("capability_args.json", f"$defs/web.search/properties/{which}Domains"): "passed to "
        "the provider whole: no count"
        for which in ("include", "exclude")
    },
    ("capability_args.json", "$defs/onchain.logs/properties/topics"): "passed to the provider "
    "whole: no count",
    ("capability_args.json", "$defs/web.extract/properties/urls"): "each checked by the broker's "
    "network guard, then passed whole: no count",
    ("manifest.schema.json", "properties/tools"): "no maxItems: the manifest's bytes bound it",
    ("manifest.schema.json", "$defs/agent/properties/skills"): "resolved one by one: no count",
    ("manifest.schema.json", "$defs/agent/properties/examples"): "shown as they are: no count",
    **{
        ("registry_answers.schema.json", where): "a registry's answer: this schema is its "
        "consumer's own bound"
        for where in (
            "$defs/searchAnswer/properties/results",
            "$defs/packageAnswer/properties/versions",
            "$defs/versionsAnswer/properties/versions",
            "$defs/versionAnswer/properties/signatures",
            "$defs/namespaceAnswer/properties/maintainers",
            "$defs/namespaceAnswer/properties/packages",
            "$defs/keysAnswer/properties/keys",
            "$defs/whoamiAnswer/properties/maintains",
            "$defs/whoamiAnswer/properties/namespaces",
            "$defs/whoamiAnswer/properties/owns",
            "$defs/tokenFields/properties/namespaces",
            "$defs/tokensAnswer/properties/tokens",
        )
    },
}


def _lists(node: Any, where: tuple[str, ...] = ()) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Each list schema below ``node`` (a ``type: array`` or one with ``items``), by its path."""
    if isinstance(node, Mapping):
        if node.get("type") == "array" or "items" in node:
            yield "/".join(where), node
        for key, child in node.items():
            if key != "x-messages":
                yield from _lists(child, (*where, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _lists(child, (*where, str(index)))


def _declared() -> dict[tuple[str, str], int | None]:
    """Every list of every schema file and its ``maxItems``: a list defined in ``$defs`` is
    named by each property whose ``$ref`` reaches it."""
    found = {}
    for path in sorted(resources.files("splice_build").joinpath("schemas").iterdir()):
        if not path.name.endswith(".json"):
            continue
        schema = json.loads(path.read_text("utf-8"))
        referred = {ref for _, ref in _refs(schema)}
        for where, node in _lists(schema):
            if where not in referred:
                found[(path.name, where)] = node.get("maxItems")
        for where, ref in _refs(schema):
            if ref in referred and any(w == ref for w, _ in _lists(schema)):
                found[(path.name, where)] = _at(schema, ref).get("maxItems")
    return found


def _refs(node: Any, where: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """Each ``$ref`` within the document: the path of the schema holding it, and its target's."""
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            yield "/".join(where), ref.removeprefix("#/")
        for key, child in node.items():
            yield from _refs(child, (*where, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _refs(child, (*where, str(index)))


def _at(schema: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    node: Any = schema
    for key in where.split("/"):
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node


def test_every_list_of_every_schema_is_held_by_what_it_reaches() -> None:
    """main: the record held 512 of the 1,000 write paths a manifest may list."""
    declared = _declared()
    assert set(declared) == set(CONSUMERS)  # a new list says what holds it
    short = {
        where: (most, consumer())
        for where, consumer in CONSUMERS.items()
        if callable(consumer) and ((most := declared[where]) is None or consumer() < most)
    }
    assert short == {}


def test_the_most_entries_of_the_longest_paths_fit_the_records_bytes() -> None:
    """Each entry at its longest: a root and a real path of as many bytes as a path may have
    on this system, none of them UTF-8 (six bytes each in the file), and a grant of the most
    UTF-16 code units, each half of a character above U+FFFF (six bytes each too). main:
    256 KiB, so 1,000 entries of an ordinary 180 bytes each did not fit either."""
    longest = "/" + "\udcff" * (os.pathconf("/", "PC_PATH_MAX") - 1)
    grant = "\U0001f600" * (MAX_RELATIVE_PATH // 2)
    entry = grant_record.Recorded(longest, grant, longest, (2**64 - 1, 2**64 - 1))
    encoded = grant_record._encoded([entry] * _record_capacity())
    assert len(encoded) <= grant_record.MAX_BYTES
