"""What the deepest manifest a registry accepts costs: the server's CPU for one publish and the
client's for reading it back, against the C ``json`` module's ``loads`` + ``dumps`` of a
document of the same size and as many containers, only 3 levels deep, in the same run.

The manifest is ``tests/registry/test_deep_answers.py``'s: a manifest.json of exactly the
2 MiB file limit whose tool input ``default`` nests as deep as the rest allows (about a
million levels, ``spec.limits.MAX_MANIFEST_DEPTH``). It is too deep for the C decoder, so
every pass over it is pure Python (``spec/json_text.py``): the rows show what each costs.
A publisher may publish it ten times a minute by default (docs/registry.md#abuse-limits).
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.common import Row, median

_SLOT = '"SLOT"'


def deepest_manifest(version: str = "1.0.0") -> str:
    """manifest.json of the file limit, its ``default`` as deep as the rest allows."""
    from splice_build.spec.limits import MAX_FILE_BYTES
    from testing.packages import minimal_manifest

    manifest = minimal_manifest(name="deepest", version=version)
    manifest["tools"][0]["input"]["properties"]["name"]["default"] = "SLOT"
    skeleton = json.dumps(manifest, separators=(",", ":"))
    levels = (MAX_FILE_BYTES - len(skeleton) + len(_SLOT)) // 2
    return skeleton.replace(_SLOT, "[" * levels + "]" * levels)


def _shallow_twin(size: int) -> str:
    """As many containers as the deepest manifest in the same bytes, 3 levels deep."""
    rows = size // 2 // 1000
    return json.dumps([[[]] * 499] * rows, separators=(",", ":"))


def _cpu_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        samples.append(time.process_time() - start)
    return median(samples) * 1000


def _archives(work: Path, count: int) -> list[bytes]:
    from splice_build.spec.pack import pack_directory
    from testing.packages import minimal_manifest, write_package

    archives = []
    for i in range(count):
        version = f"1.0.{i}"
        text = deepest_manifest(version)
        directory = write_package(
            work / version, minimal_manifest(name="deepest"), {"manifest.json": text}
        )
        archives.append(pack_directory(directory).archive)
    return archives


def run(quick: bool = False) -> list[Row]:
    from splice_build.registry.client.embedded import EmbeddedRegistryClient
    from splice_build.registry.client.http import _answer
    from splice_build.spec import json_text
    from splice_build.spec.manifest import Manifest
    from splice_build.spec.pack import pack_directory
    from testing.packages import minimal_manifest, write_package

    repeat = 3 if quick else 5
    text = deepest_manifest()
    twin = _shallow_twin(len(text))
    base = _cpu_ms(lambda: json.dumps(json.loads(twin)), repeat)
    label = "json.loads + json.dumps, same size 3 deep"
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        directory = write_package(
            work / "pack", minimal_manifest(name="deepest"), {"manifest.json": text}
        )
        rows.append(
            Row(
                "pack (client)",
                _cpu_ms(lambda: pack_directory(directory), repeat),
                "ms",
                label,
                base,
            )
        )
        client = EmbeddedRegistryClient(work / "store")  # the server's service, in-process
        archives = iter(_archives(work / "versions", repeat))
        took = _cpu_ms(lambda: client.publish(next(archives)), repeat)
        client.close()
        rows.append(Row("publish (server)", took, "ms", label, base))
        answer = json_text.stringify({"manifest": json_text.parse(text)})
        data = answer.encode()
        rows.append(
            Row(
                "version answer decoded (client)",
                _cpu_ms(lambda: _answer(data, "/packages/acme/deepest/1.0.0"), repeat),
                "ms",
                label,
                base,
            )
        )
        rows.append(
            Row(
                "Manifest.from_json",
                _cpu_ms(lambda: Manifest.from_json(text), repeat),
                "ms",
                label,
                base,
            )
        )
        normalized = Manifest.from_json(text).to_json()
        rows.append(
            Row(
                "canonical",
                _cpu_ms(lambda: json_text.canonical(normalized), repeat),
                "ms",
                label,
                base,
            )
        )
        rows.append(
            Row(
                "canonical_and_stringified (one walk)",
                _cpu_ms(lambda: json_text.canonical_and_stringified(normalized), repeat),
                "ms",
                label,
                base,
            )
        )
        rows.append(
            Row(
                "stringify",
                _cpu_ms(lambda: json_text.stringify(normalized), repeat),
                "ms",
                label,
                base,
            )
        )
    return rows
