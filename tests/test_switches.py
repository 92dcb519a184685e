"""The test switches hold whatever runs first: a child ``pytest`` run that selects single
tests with ``-k`` fails on a missing service or OS layer when the switch requires it, and
skips without it — whether the switch is read while fixtures are set up or inside the test
body, after ``tests/conftest.py`` has cleared ``SPLICE_*``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testing.isolation import os_layer_missing, without_user_namespaces
from testing.switches import NAMES, REQUIRE_OS_LAYER, REQUIRE_SERVICES

REPO = Path(__file__).resolve().parent.parent

# A child pytest where PostgreSQL's programs cannot be found (whatever this machine has).
NO_POSTGRES = (
    "import sys, pytest, testing.services as services\n"
    "services.postgres_bin_dir = lambda: None\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)


def _child_env(**switches: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NAMES}
    return {**env, **switches}


def _pytest(prefix: list[str], code: str, args: list[str], env: dict[str, str]) -> tuple[int, str]:
    done = subprocess.run(
        [*prefix, sys.executable, "-c", code, "-q", "-n", "0", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stdout + done.stderr


POSTGRES_TEST = ["tests/registry/test_db_sqlite.py", "-k", "test_duplicate_user and postgres"]


def test_a_missing_required_service_fails_a_single_selected_test() -> None:
    code, out = _pytest([], NO_POSTGRES, POSTGRES_TEST, _child_env(**{REQUIRE_SERVICES: "1"}))
    assert code == 1, out
    assert "PostgreSQL + S3 back end required but unavailable" in out
    assert "1 error" in out and "skipped" not in out


def test_without_the_switch_a_missing_service_skips() -> None:
    code, out = _pytest([], NO_POSTGRES, POSTGRES_TEST, _child_env())
    assert code == 0, out
    assert "1 skipped" in out


PLAIN_PYTEST = "import sys, pytest\nsys.exit(pytest.main(sys.argv[1:]))\n"
# One test marked as needing the OS layer; one that accepts either layer and asks, in its
# body, which one must have run.
OS_LAYER_TESTS = [
    "tests/runtime/test_isolation_pool.py",
    "tests/runtime/test_isolation_config.py",
    "-k",
    "test_a_warm_process_has_the_os_layer or test_an_mcp_call_result_says_which_isolation_ran",
]


@pytest.mark.node
def test_a_missing_required_os_layer_fails_a_single_selected_test() -> None:
    prefix = without_user_namespaces()  # a place where the kernel refuses the OS layer
    if prefix is None:
        os_layer_missing("no place without user namespaces here (needs unshare --user)")
    required = _child_env(**{REQUIRE_OS_LAYER: "1"})
    code, out = _pytest(prefix, PLAIN_PYTEST, OS_LAYER_TESTS, required)
    assert code == 1, out
    assert "1 failed" in out and "1 error" in out  # in the test body; in its set-up
    assert out.count(f"{REQUIRE_OS_LAYER}=1: the OS layer is required") >= 2
    code, out = _pytest(prefix, PLAIN_PYTEST, OS_LAYER_TESTS, _child_env())
    assert code == 0 and "1 passed, 1 skipped" in out, out
