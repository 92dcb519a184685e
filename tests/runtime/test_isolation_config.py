"""Choosing the isolation (SpliceRuntime(isolation=…), config.json ``isolation``), never
failing open silently (``require-os`` → ISOLATION_UNAVAILABLE), and reporting it
(``splice run --json``, ``splice doctor``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from splice_build.errors import ErrorCode, SpliceError
from splice_build.runtime import SpliceRuntime
from splice_build.skills import skills_root
from testing.cli import run_splice, splice_executable
from testing.isolation import (
    needs_os_layer,
    os_layer_available,
    os_layer_missing,
    without_user_namespaces,
)

EXAMPLE = str(skills_root() / "example")
REPO = Path(__file__).resolve().parents[2]


def _home(tmp_path: Path, config: dict[str, object]) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return {"SPLICE_HOME": str(home)}


def test_the_mode_comes_from_the_user_config(tmp_path: Path) -> None:
    env = _home(tmp_path, {"isolation": "in-process"})
    assert SpliceRuntime(project_root=tmp_path, env=env).isolation_mode == "in-process"
    assert SpliceRuntime(project_root=tmp_path, env=env, isolation="auto").isolation_mode == "auto"


def test_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    env = _home(tmp_path, {"isolation": "off"})
    with pytest.raises(SpliceError) as caught:
        SpliceRuntime(project_root=tmp_path, env=env)
    assert caught.value.code == ErrorCode.INVALID_CONFIG
    assert "auto, require-os, in-process" in caught.value.message
    with pytest.raises(SpliceError):
        SpliceRuntime(project_root=tmp_path, env={}, isolation="none")


@pytest.mark.node
@needs_os_layer()
def test_run_json_reports_the_layer(tmp_path: Path) -> None:
    env = _home(tmp_path, {"isolation": "require-os"})
    done = run_splice(
        "--json", "run", "--dir", EXAMPLE, "example.hello", "name=x", cwd=tmp_path, env=env
    )
    assert done.code == 0, done.stderr
    isolation = done.json()["isolation"]
    assert isolation["layer"] == "os" and isolation["network"] == "none"
    assert isolation["namespaces"] == ["user", "pid", "ipc", "mount", "net"]
    assert isolation["noNewPrivs"] is True and isolation["capabilities"] == "none"
    from splice_build.runtime.isolation.seccomp import detect as seccomp_support

    assert isolation["seccomp"] == ("sockets denied" if seccomp_support().available else "off")
    from splice_build.runtime.isolation.support import detect

    assert isolation["fileView"] == ("minimal" if detect().file_view else "host")
    assert isolation["limits"]["coreBytes"] == 0


@pytest.mark.node
def test_doctor_lists_every_layer(tmp_path: Path) -> None:
    env = _home(tmp_path, {})
    done = run_splice("--json", "doctor", cwd=tmp_path, env=env)
    assert done.code == 0, done.stderr
    report = done.json()
    names = [layer["name"] for layer in report["layers"]]
    assert names[:3] == ["node permission model", "in-process guards", "user namespace"]
    assert {"pid namespace", "network namespace", "no_new_privs", "seccomp"} <= set(names)
    assert {"resource limits", "process limit", "cgroup v2 memory limit"} <= set(names)
    assert {"file view", "core limit"} <= set(names)
    assert all(layer["detail"] for layer in report["layers"])  # a reason for every "off"
    assert report["isolation"] == "auto" and report["node"]["permissionModel"] is True
    layers = {layer["name"]: layer for layer in report["layers"]}
    from splice_build.runtime.isolation.support import detect

    support = detect()
    assert layers["file view"]["active"] is support.file_view
    assert layers["network namespace"]["active"] is support.namespaces
    assert layers["core limit"]["active"] is True
    assert "RLIMIT_CORE 0" in layers["core limit"]["detail"]
    text = run_splice("doctor", cwd=tmp_path, env=env)
    assert text.code == 0 and "[on ] node permission model" in text.stdout
    assert "[on ] core limit: RLIMIT_CORE 0" in text.stdout
    view = "[on ] file view: a fresh read-only root" if support.file_view else "[off] file view: "
    assert view in text.stdout


@pytest.mark.node
def test_doctor_says_every_os_layer_is_off_under_in_process(tmp_path: Path) -> None:
    env = _home(tmp_path, {"isolation": "in-process"})
    done = run_splice("--json", "doctor", cwd=tmp_path, env=env)
    assert done.code == 0, done.stderr
    layers = {layer["name"]: layer for layer in done.json()["layers"]}
    off = ("user namespace", "pid namespace", "ipc namespace", "network namespace", "file view")
    for name in (*off, "seccomp", "process limit"):
        assert layers[name]["active"] is False, layers[name]
        assert layers[name]["detail"].startswith("isolation = in-process"), layers[name]
    assert layers["core limit"]["active"] is True
    assert "an empty read-only directory" in layers["core limit"]["detail"]


def test_doctor_claims_a_process_limit_exactly_when_the_runtime_sets_one() -> None:
    """For every mode, doctor's "process limit" is on iff the plan a tool process gets has
    one (under in-process it said "pid_max 301 in the PID namespace", with no namespace)."""
    from splice_build.runtime.isolation.doctor import machine_report
    from splice_build.runtime.isolation.plan import MODES, plan_for
    from splice_build.runtime.isolation.support import detect

    support = detect()
    for mode in MODES:
        layers = {
            layer["name"]: layer for layer in machine_report(dict(os.environ), mode)["layers"]
        }
        try:
            limits = plan_for(mode, support).to_json()["processLimit"]
        except SpliceError as exc:  # require-os with a layer missing: no tool runs at all
            assert exc.code is ErrorCode.ISOLATION_UNAVAILABLE
            continue
        assert layers["process limit"]["active"] is bool(limits), (mode, layers, limits)


@pytest.mark.node
def test_doctor_without_namespaces_says_why_the_file_view_is_off(tmp_path: Path) -> None:
    prefix = without_user_namespaces()
    if prefix is None:
        os_layer_missing("no place without user namespaces here (needs unshare --user)")
    env = {**os.environ, **_home(tmp_path, {})}
    done = subprocess.run(
        [*prefix, splice_executable(), "--json", "doctor"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    layers = {layer["name"]: layer for layer in json.loads(done.stdout)["layers"]}
    assert layers["file view"]["active"] is False and layers["network namespace"]["active"] is False
    assert "needs the namespaces" in layers["file view"]["detail"]
    assert "No space left on device" in layers["file view"]["detail"]
    assert "No space left on device" in layers["network namespace"]["detail"]
    assert layers["core limit"]["active"] is True


SCRIPT = """
import json, sys
from pathlib import Path
from splice_build.errors import SpliceError
from splice_build.runtime import SpliceRuntime
root = Path(sys.argv[1])
out = {}
try:
    SpliceRuntime(project_root=root, env={}, isolation="require-os")
except SpliceError as exc:
    out["require"] = [str(exc.code), exc.details]
runtime = SpliceRuntime(project_root=root, env={}, isolation="auto")
result = runtime.execute(runtime.load(sys.argv[2]), "hello", {"name": "x"})
out["auto"] = [result.ok, result.to_json()["isolation"]]
print(json.dumps(out))
"""


@pytest.mark.node
def test_without_namespaces_require_os_fails_and_auto_says_so(tmp_path: Path) -> None:
    prefix = without_user_namespaces()
    if prefix is None:
        os_layer_missing("no place without user namespaces here (needs unshare --user)")
    done = subprocess.run(
        [*prefix, sys.executable, "-c", SCRIPT, str(tmp_path), EXAMPLE],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    code, details = out["require"]
    assert code == "ISOLATION_UNAVAILABLE" and "No space left on device" in details[0]
    ok, isolation = out["auto"]
    assert ok and isolation["layer"] == "in-process" and isolation["namespaces"] == []
    assert "No space left on device" in isolation["unavailable"][0]


@pytest.mark.node
def test_an_mcp_call_result_says_which_isolation_ran(tmp_path: Path) -> None:
    import os

    from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server, Session
    from splice_build.project.project_file import init_project
    from splice_build.sdk import Splice

    root, _created = init_project(tmp_path / "project")
    splice = Splice(root, home=Path(os.environ["SPLICE_HOME"]))
    splice.add(["@splice/example"])
    server = Server(InstalledBackend(splice), ServerInfo(instructions=INSTRUCTIONS))
    call = {"name": "splice_example_hello", "arguments": {"name": "Ada"}}
    response = server.handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}, Session()
    )
    assert response is not None
    meta = response["result"]["_meta"]["io.spliceloom/isolation"]
    layered = os_layer_available()
    assert meta["layer"] == ("os" if layered else "in-process")
    assert meta["network"] == ("none" if layered else "host")


# The user's side with a kernel that refuses the seccomp filter (here: a machine no filter
# is written for) but allows every other layer: under require-os the runtime must refuse
# before any tool runs; under auto the tool runs and the result says seccomp is off.
NO_FILTER = """
import json, sys
from splice_build.errors import SpliceError
from splice_build.runtime import SpliceRuntime
from splice_build.runtime.isolation import seccomp
seccomp.machine = lambda: "riscv64"
root = __import__("pathlib").Path(sys.argv[1])
out = {}
try:
    runtime = SpliceRuntime(project_root=root, env={}, isolation="require-os")
    result = runtime.execute(runtime.load(sys.argv[2]), "hello", {"name": "x"})
    out["require"] = ["ran", result.to_json().get("isolation")]
except SpliceError as exc:
    out["require"] = [str(exc.code), list(exc.details)]
print(json.dumps(out))
"""


@pytest.mark.node
@needs_os_layer()
def test_require_os_refuses_when_the_seccomp_filter_is_missing(tmp_path: Path) -> None:
    """``require-os`` promises every OS layer: it used to check the namespaces only, and a
    machine whose kernel refused the filter ran the tool with every system call (reported
    as ``seccomp: off``, never refused)."""
    done = subprocess.run(
        [sys.executable, "-c", NO_FILTER, str(tmp_path), EXAMPLE],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    code, details = json.loads(done.stdout)["require"]
    assert code == "ISOLATION_UNAVAILABLE", details
    assert details == ["seccomp: no filter is written for the riscv64 architecture"]


@pytest.mark.parametrize("layer", ["file view", "seccomp", "no_new_privs"])
def test_require_os_refuses_every_missing_layer_it_claims(layer: str) -> None:
    from splice_build.records import replace
    from splice_build.runtime.isolation import plan, seccomp, support

    found = support.detect()
    if not (found.file_view and found.seccomp.available and found.no_new_privs):
        os_layer_missing("this machine lacks part of the OS layer itself")
    lacking = {
        "file view": {"file_view_reason": "the kernel refused it (test)"},
        "seccomp": {"seccomp": seccomp.SeccompStatus(False, "the kernel refused it (test)")},
        "no_new_privs": {"no_new_privs": False, "no_new_privs_reason": "refused (test)"},
    }[layer]
    without = replace(found, **lacking)
    with pytest.raises(SpliceError) as caught:
        plan.plan_for("require-os", without)
    assert caught.value.code == ErrorCode.ISOLATION_UNAVAILABLE
    assert [d.partition(":")[0] for d in caught.value.details] == [layer]
    assert layer in caught.value.message
    assert plan.plan_for("auto", without).to_json()["layer"] == "os"  # auto: reported only


@pytest.mark.node
@needs_os_layer()
def test_a_changed_setting_reaches_the_next_call_of_a_long_lived_runtime(tmp_path: Path) -> None:
    """The setting switched back to ``auto`` (or made ``require-os``, or broken) while one
    runtime serves is the next call's, not the start's: a ``splice mcp --reuse`` read it once
    and went on running in-process, in the very process it kept from before."""
    from splice_build.spec.reuse import ReusePolicy
    from testing.hostile_packages import tool_returning, write_package

    env = _home(tmp_path, {"isolation": "in-process"})
    config = Path(env["SPLICE_HOME"]) / "config.json"
    body = tool_returning("{ token }", imports="const token = Math.random();")
    seen: list[object] = []
    with SpliceRuntime(project_root=tmp_path, env=env, reuse=ReusePolicy()) as runtime:
        pkg = runtime.load(write_package(tmp_path / "pkgs", body))
        for setting in ("in-process", "in-process", "auto", "require-os", "sandbox"):
            config.write_text(json.dumps({"isolation": setting}), encoding="utf-8")
            result = runtime.execute(pkg, "t", {})
            if result.error is not None:
                seen.append(result.error.code)
            else:
                assert result.isolation is not None
                seen.append((result.isolation.os_layer, result.output["token"]))
    kept, again, auto, required, broken = seen
    assert kept == again and kept[0] is False  # type: ignore[index]
    assert auto[0] is True and auto[1] != kept[1]  # type: ignore[index]
    assert required == auto  # the same OS-layer process: its plan is the same
    assert broken == ErrorCode.INVALID_CONFIG
