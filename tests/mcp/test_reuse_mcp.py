"""`splice mcp --reuse` and `"reuse"` in splice.json, through the real server and the
official SDK client: successive calls of one package are served by one sandbox process
(its Node stays the same between calls), while without either every call has a fresh one."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from testing.mcp_clients import installed_project, sdk_stdio, splice_argv
from testing.pool import sandbox_pids

pytestmark = pytest.mark.node


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    return installed_project(tmp_path_factory.mktemp("mcp-reuse"))


def _node_pids_after_calls(project: Path, env: dict[str, str], *flags: str) -> list[set[int]]:
    """The example package's live Node processes after each of 5 calls."""
    needle = str(project / ".splice" / "packages" / "@splice" / "example")
    seen: list[set[int]] = []

    async def scenario() -> None:
        async with sdk_stdio(splice_argv("mcp", *flags), env=env, cwd=project) as session:
            for i in range(5):
                called = await session.call_tool("splice_example_hello", {"name": f"n{i}"})
                assert not called.is_error, called
                assert called.structured_content == {"message": f"Hello, n{i}."}
                seen.append(set(sandbox_pids(needle)))

    anyio.run(scenario)
    return seen


def _survivors(seen: list[set[int]]) -> set[int]:
    """Processes alive after every call but the first: with reuse, the one serving the
    calls and the warm pool's spare (never taken while the reused one serves); without it,
    none (every call takes the spare and ends it)."""
    return set.intersection(*seen[1:])


def test_without_reuse_every_call_has_a_fresh_process(installed) -> None:
    project, env = installed
    assert _survivors(_node_pids_after_calls(project, env)) == set()


def test_reuse_flag_serves_successive_calls_from_one_process(installed) -> None:
    project, env = installed
    assert _survivors(_node_pids_after_calls(project, env, "--reuse")) != set()


def test_reuse_in_splice_json(installed) -> None:
    project, env = installed
    config = project / "splice.json"
    original = config.read_text()
    try:
        config.write_text(json.dumps({**json.loads(original), "reuse": {"maxCalls": 50}}))
        assert _survivors(_node_pids_after_calls(project, env)) != set()
    finally:
        config.write_text(original)


@pytest.mark.parametrize("reuse", [True, "project", False])
def test_the_sdk_option(installed, reuse: object) -> None:
    """``Splice(reuse=True)`` reuses; ``"project"`` follows splice.json (no setting here: off);
    the default is a fresh process per call."""
    from splice_build.sdk import Splice

    project, env = installed
    with Splice(project, env=env, reuse=reuse) as splice:  # type: ignore[arg-type]
        for i in range(3):
            assert splice.run("example.hello", {"name": f"n{i}"}).ok
        runtime = splice._runtime_instance  # made by the first call
        assert runtime is not None
        pool = runtime._reuse
        reused = None if pool is None else pool.stats().reused
    assert reused == (2 if reuse is True else None)
