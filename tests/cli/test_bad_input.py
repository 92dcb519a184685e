"""The CLI never crashes on bad input (docs/cli.md#exit-codes-and-errors): every command of
the parser, walked programmatically, answers `--json` with exactly one JSON document and an
exit code of the documented set; undecodable bytes in directory names and arguments work or
fail clearly; usage errors are exit 2; an unexpected failure is still one JSON document."""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from splice_build.cli.parser import build_parser, load_commands
from splice_build.errors import ErrorCode
from testing.cli import Completed, foreground_signals, run_splice, splice_executable
from testing.mcp_clients import DEMO_TOKEN
from testing.packages import write_package

EXIT_CODES = {0, 1, 2}  # docs/cli.md: 130 only on ^C
UNDECODABLE = "\udcff"  # how Python holds the byte 0xff of a file name or argument


def _command_paths() -> Iterator[list[str]]:
    """Every command word sequence: each command, then each choice of its leading word
    arguments (``workspace list``, ``registry admin create-token``, ``keys revoke``…)."""
    parser = build_parser(load_commands())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        paths = [[name]]
        for action in command._actions:
            if action.option_strings or not action.choices:
                continue
            optional = [list(p) for p in paths] if action.nargs == "?" else []
            paths = [[*p, choice] for p in paths for choice in action.choices] + optional
        yield from paths


def _operands(words: list[str]) -> list[str]:
    """An undecodable value for each positional argument that is not a command word."""
    parser = build_parser(load_commands())
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command = sub.choices[words[0]]
    return [
        f"{UNDECODABLE}-missing"
        for action in command._actions
        if not action.option_strings and not action.choices
    ]


COMMAND_PATHS = [" ".join(words) for words in _command_paths()]


def one_document(done: Completed) -> object:
    """The single JSON document on stdout (``json.loads`` refuses anything after it)."""
    assert "Traceback" not in done.stderr, done.stderr
    try:
        return json.loads(done.stdout)
    except ValueError as exc:
        raise AssertionError(f"not one JSON document ({exc}): {done.stdout!r}") from None


def assert_failure_document(done: Completed, code: str | None = None) -> dict:
    document = one_document(done)
    assert isinstance(document, dict) and document["ok"] is False, document
    assert document["error"]["code"] in set(ErrorCode), document
    if code is not None:
        assert document["error"]["code"] == code, document
    return document


def test_the_walk_sees_nested_command_words() -> None:
    for path in ("workspace list", "registry admin create-token", "registry serve", "keys revoke"):
        assert path in COMMAND_PATHS
    assert len(COMMAND_PATHS) > 40


@pytest.mark.parametrize("path", COMMAND_PATHS)
def test_every_command_refuses_an_unknown_option_with_one_json_document(
    tmp_path: Path, path: str
) -> None:
    done = run_splice(*path.split(), "--no-such-option", "--json", cwd=tmp_path, timeout=60)
    assert done.code == 2, done.stderr
    assert_failure_document(done, "USAGE")


@pytest.mark.parametrize("path", COMMAND_PATHS)
def test_every_command_answers_undecodable_input_with_one_json_document(
    tmp_path: Path, path: str
) -> None:
    """Working directory, SPLICE_HOME and every operand hold the byte 0xff; the registry is
    unreachable. Whatever the command does, it answers one document and never crashes."""
    cwd = tmp_path / f"cwd{UNDECODABLE}"
    cwd.mkdir()
    env = {
        "SPLICE_HOME": str(tmp_path / f"home{UNDECODABLE}"),
        "SPLICE_REGISTRY": "http://127.0.0.1:9",
    }
    words = path.split()
    done = run_splice(*words, *_operands(words), "--json", cwd=cwd, env=env, timeout=90)
    assert done.code in EXIT_CODES, done.stderr
    if done.code == 0:
        one_document(done)
    else:
        document = assert_failure_document(done)
        assert document["error"]["code"] != "INTERNAL_ERROR", document


@pytest.fixture(scope="module")
def undecodable_project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A project named with byte 0xff, @splice/example installed, its own SPLICE_HOME."""
    root = tmp_path_factory.mktemp("project") / f"w{UNDECODABLE}"
    project = root / f"proj{UNDECODABLE}"
    project.mkdir(parents=True)
    env = {"SPLICE_HOME": str(root / f"home{UNDECODABLE}"), "HOME": str(root)}
    for words in (["init"], ["add", "@splice/example"]):
        done = run_splice(*words, cwd=project, env=env, timeout=300)
        assert done.code == 0, done.stderr
    return project, env


# Not run bare in the project: `registry serve` serves until it is stopped; `mcp` speaks the
# MCP protocol on stdout (its stdio tests are in tests/mcp).
_LONG_RUNNING = {"registry serve", "mcp"}


@pytest.mark.parametrize("path", [p for p in COMMAND_PATHS if p not in _LONG_RUNNING])
def test_every_command_in_an_undecodable_project_answers_one_json_document(
    undecodable_project: tuple[Path, dict[str, str]], path: str
) -> None:
    project, env = undecodable_project
    done = run_splice(*path.split(), "--json", cwd=project, env=env, timeout=300)
    assert done.code in EXIT_CODES, done.stderr
    document = one_document(done)
    if done.code != 0:
        assert isinstance(document, dict) and document["ok"] is False, document
        assert document["error"]["code"] != "INTERNAL_ERROR", document


def test_global_options_work_after_nested_command_words(tmp_path: Path) -> None:
    assert run_splice("init", str(tmp_path / "app")).code == 0
    done = run_splice("workspace", "list", "--json", cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert one_document(done)["members"] == ["app"]
    done = run_splice("registry", "admin", "create-user", "x", "--data", "nope", "--json")
    assert_failure_document(done, "USAGE")


def test_a_project_directory_with_an_undecodable_name(tmp_path: Path) -> None:
    project = tmp_path / f"proj{UNDECODABLE}"
    project.mkdir()
    for words in (["init"], ["add", "@splice/example"], ["list"], ["verify", "@splice/example"]):
        done = run_splice(*words, "--json", cwd=project, timeout=300)
        assert done.code == 0, done.stderr
        one_document(done)
    human = run_splice("list", cwd=project)
    assert human.code == 0 and "@splice/example" in human.stdout
    run = run_splice("run", "example.hello", "name=x", "--json", cwd=project)
    assert run.code == 1, run.stderr
    error = one_document(run)["error"]
    assert error["code"] == "TOOL_LOAD_FAILED"
    assert error["details"][0] == "directory name: proj\\xff"
    shown = run_splice("run", "example.hello", "name=x", cwd=project)
    assert "is not valid UTF-8, so Node.js cannot load tools from it" in shown.stderr
    assert "proj\\xff" in shown.stderr


def test_a_package_directory_with_an_undecodable_name(tmp_path: Path) -> None:
    package = write_package(tmp_path / f"pkg{UNDECODABLE}")
    for words in (
        ["validate"],
        ["pack", "--out", str(tmp_path / "out.tgz")],
        ["publish", "--dry-run"],
    ):
        head, rest = words[0], words[1:]
        done = run_splice(head, str(package), *rest, "--json", cwd=tmp_path)
        assert done.code == 0, done.stderr
        one_document(done)
    done = run_splice(
        "run", "greeter.hello", "name=x", "--dir", str(package), "--json", cwd=tmp_path
    )
    assert done.code == 1
    assert one_document(done)["error"]["code"] == "TOOL_LOAD_FAILED"


def test_an_undecodable_query_or_label_is_a_usage_error(tmp_path: Path) -> None:
    for words in (["search", f"q{UNDECODABLE}"], ["token", "create", "--label", UNDECODABLE]):
        done = run_splice(*words, "--json", cwd=tmp_path)
        assert done.code == 2, done.stderr
        message = assert_failure_document(done, "USAGE")["error"]["message"]
        assert "is not valid UTF-8 text" in message


def _usage(done: Completed, fragment: str) -> None:
    assert done.code == 2, done.stdout + done.stderr
    assert fragment in assert_failure_document(done, "USAGE")["error"]["message"]


def test_registry_serve_with_a_port_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    for port in ("99999", "-1", "x"):
        done = run_splice("registry", "serve", "--port", port, "--json", cwd=tmp_path)
        _usage(done, "--port must be an integer from 0 to 65535")
    done = run_splice(
        "registry", "serve", "--host", "192.0.2.1", "--port", "0", "--json", cwd=tmp_path
    )
    _usage(done, "cannot listen on 192.0.2.1:0")
    assert not (tmp_path / "splice-registry-data").exists()  # refused before a store is made


def test_a_port_in_use_says_what_to_do(tmp_path: Path) -> None:
    """A second `splice registry serve` or `splice mcp --http` on the port of one already
    running was USAGE "cannot listen on 127.0.0.1:8787: Address already in use" with no hint."""
    import socket

    (tmp_path / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    hint = "Another process listens there: stop it, or choose another --port (0 picks a free one)."
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for argv, env in (
            (["registry", "serve", "--data", str(tmp_path / "data")], None),
            (["mcp", "--http"], {"SPLICE_MCP_TOKEN": DEMO_TOKEN}),
        ):
            done = run_splice(*argv, "--port", port, "--json", cwd=tmp_path, env=env)
            _usage(done, f"cannot listen on 127.0.0.1:{port}: Address already in use")
            assert done.json()["error"]["hint"] == hint, argv


def test_pack_out_into_a_missing_directory_or_onto_a_directory(tmp_path: Path) -> None:
    package = write_package(tmp_path / "pkg")
    missing = tmp_path / "missing" / "out.tgz"
    done = run_splice("pack", str(package), "--out", str(missing), "--json", cwd=tmp_path)
    _usage(done, "does not exist")
    done = run_splice("pack", str(package), "--out", str(tmp_path), "--json", cwd=tmp_path)
    _usage(done, "is a directory")
    assert not missing.parent.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["pkg"]  # no archive, no temporary file


def test_registry_admin_data_that_is_a_file_or_missing(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a store")
    cases = [
        (a_file, "is not a directory"),
        (a_file / "below", "is inside"),
        (tmp_path / "missing", "does not exist"),
    ]
    for data, fragment in cases:
        for verb in (
            ["create-user", "alice"],
            ["create-token", "alice", "--show"],
            ["migrate-artifacts"],
        ):
            args = ("registry", "admin", *verb, "--data", str(data), "--json")
            _usage(run_splice(*args, cwd=tmp_path), fragment)
    assert not (tmp_path / "missing").exists()
    assert a_file.read_text() == "not a store"


def test_a_malformed_user_or_namespace_is_named_before_the_store_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`registry admin create-user 'Bad Name'` was the store's BAD_REQUEST (exit 1) "name must
    be a valid namespace name", naming neither the word nor the rule, and `token create
    --namespace 'Acme!'` the registry's (REGISTRY_ERROR); `splice namespace` of a malformed
    namespace was INVALID_NAME (exit 2) already."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    (tmp_path / "data").mkdir()
    rule = "may only contain lowercase letters, digits and dashes."
    for argv, message in (
        (["create-user", "Bad Name"], f'Invalid user name "Bad Name". A user name {rule}'),
        (["set-owner", "Acme", "bob"], f'Invalid namespace "Acme". A namespace {rule}'),
        (["set-owner", "acme", "bob!"], f'Invalid user name "bob!". A user name {rule}'),
    ):
        capsys.readouterr()
        assert main(["--json", "registry", "admin", *argv, "--data", str(tmp_path / "data")]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["message"]) == ("INVALID_NAME", message), argv
    for argv in (
        ["namespace", "add-maintainer", "acme", "Bob"],
        ["token", "create", "--namespace", "Acme!"],  # was the registry's BAD_REQUEST
        ["registry", "admin", "create-token", "bob", "--show", "--namespace", "Acme!"],
    ):
        capsys.readouterr()
        assert main(["--json", *argv, "--registry", "http://127.0.0.1:9"]) == 2, argv
        assert json.loads(capsys.readouterr().out)["error"]["code"] == "INVALID_NAME", argv
    capsys.readouterr()  # keys said "Invalid namespace '@Acme'", without the rule
    assert main(["--json", "keys", "list", "@Acme"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"] == f'Invalid namespace "@Acme". A namespace {rule}'


def test_a_root_that_is_no_directory_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--root` of `sync` and `workspace` naming nothing was "No project (splice.json) in the
    workspace at …" (`sync` exit 1, `workspace list` exit 0: a typo read as an empty
    workspace), and naming a file a raw "[Errno 20] Not a directory"."""
    from splice_build.cli.main import main

    monkeypatch.setenv("SPLICE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    missing = f"--root {tmp_path / 'typo'} does not exist"
    a_file = f"--root {tmp_path / 'a-file'} is not a directory"
    for argv, message in (
        (["sync", "--root", "typo"], missing),
        (["sync", "--check", "--root", "a-file"], a_file),
        (["workspace", "list", "--root", "typo"], missing),
        (["workspace", "add", ".", "--root", "a-file"], a_file),
    ):
        capsys.readouterr()
        assert main(["--json", *argv]) == 2, argv
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["code"], error["message"]) == ("USAGE", message), argv


def test_init_on_a_file_is_a_usage_error(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    _usage(run_splice("init", str(a_file), "--json"), "is not a directory")


def test_an_unexpected_failure_is_one_json_document_with_a_crash_report(tmp_path: Path) -> None:
    """A registry store whose database path is a directory: SQLite cannot open it, and no
    code anticipates that (a garbage file is STORAGE_UNAVAILABLE, tests/faults)."""
    data = tmp_path / "data"
    (data / "registry.db").mkdir(parents=True)
    done = run_splice("registry", "admin", "create-user", "alice", "--data", str(data), "--json")
    assert done.code == 1
    error = assert_failure_document(done, "INTERNAL_ERROR")["error"]
    assert error["message"].startswith("unexpected failure: ")
    report = Path(error["hint"].removeprefix("a report was written to "))
    assert report.is_file() and "Traceback" in report.read_text()


def test_a_crash_report_in_a_new_home_is_readable_by_its_user_only(tmp_path: Path) -> None:
    """The report quotes argv and the failure's messages; the crash may be the first thing
    written to SPLICE_HOME, which must not then be created readable by every local user."""
    data = tmp_path / "data"
    (data / "registry.db").mkdir(parents=True)
    home = tmp_path / "new-home"
    done = run_splice(
        "registry", "admin", "create-user", "alice", "--data", str(data), "--json",
        env={"SPLICE_HOME": str(home)},
    )  # fmt: skip
    error = assert_failure_document(done, "INTERNAL_ERROR")["error"]
    report = Path(error["hint"].removeprefix("a report was written to "))
    assert report.parent == home / "logs"
    modes = [path.stat().st_mode & 0o777 for path in (home, home / "logs", report)]
    assert modes == [0o700, 0o700, 0o600]


@pytest.mark.parametrize("given", ["--token", "--token="])
def test_a_crash_report_never_quotes_the_token_login_was_given(tmp_path: Path, given: str) -> None:
    """The report quotes argv, and `login --token` puts the token there, in no format redaction knows: it was written in clear."""
    home = tmp_path / "home"
    (home / "registry" / "registry.db").mkdir(parents=True)  # the embedded store cannot open
    token = "splice_" + "Zq8" * 14 + "Z"  # the token format: login refuses anything else
    argv = [given, token] if given == "--token" else [given + token]
    done = run_splice(
        "--registry", "embedded", "login", *argv, "--json", env={"SPLICE_HOME": str(home)}
    )
    error = assert_failure_document(done, "INTERNAL_ERROR")["error"]
    report = Path(error["hint"].removeprefix("a report was written to ")).read_text()
    assert "Traceback" in report
    assert token not in report
    assert "[REDACTED]" in report


def test_no_command_under_json_is_one_usage_document() -> None:
    done = run_splice("--json")
    assert done.code == 2
    assert_failure_document(done, "USAGE")


def _reading_stdin(pid: int) -> bool:
    """Whether process ``pid`` is blocked in ``read(0, …)`` (x86-64 Linux: syscall 0)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return fields[:2] == ["0", "0x0"]


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.machine() != "x86_64",
    reason="finds the blocking read through /proc/<pid>/syscall (x86-64 Linux numbering)",
)
def test_interrupted_under_json_is_one_document_and_exit_130(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [splice_executable(), "login", "--json", "--registry", "http://127.0.0.1:9"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=foreground_signals(),  # Python keeps an ignored SIGINT ignored
    )
    try:
        deadline = time.monotonic() + 60
        while not _reading_stdin(process.pid):  # waiting for the token on stdin
            assert process.poll() is None and time.monotonic() < deadline, "never read stdin"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        # stdin stays open until it exits: communicate() would close it at once, and a
        # process not yet scheduled could read that end of input before the signal.
        process.wait(timeout=30)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130, (stdout, stderr)
    document = json.loads(stdout)
    assert document["ok"] is False and document["error"]["code"] == "INTERRUPTED"
    assert document["error"]["message"] == "interrupted by SIGINT"


@pytest.mark.parametrize("token", [f"splice_{UNDECODABLE}", "splice_é", "splice_\x1b[2J"])
def test_a_token_that_cannot_be_sent_is_a_config_error(tmp_path: Path, token: str) -> None:
    done = run_splice(
        "whoami", "--registry", "http://127.0.0.1:9", "--json", env={"SPLICE_TOKEN": token}
    )
    assert done.code == 2, done.stderr
    error = assert_failure_document(done, "INVALID_CONFIG")["error"]
    assert error["message"].startswith("SPLICE_TOKEN is not a registry token")


def test_a_workspace_member_with_an_undecodable_name(tmp_path: Path) -> None:
    member = tmp_path / f"m{UNDECODABLE}"
    assert run_splice("init", str(member)).code == 0
    added = run_splice("workspace", "add", str(member), "--json", cwd=tmp_path)
    assert added.code == 2
    message = assert_failure_document(added, "USAGE")["error"]["message"]
    assert message == "m\\xff is not valid UTF-8, so it cannot be written to pyproject.toml"
    (tmp_path / "pyproject.toml").write_text('[tool.splice.workspace]\nmembers = ["*"]\n')
    listed = run_splice("workspace", "list", "--json", cwd=tmp_path)
    assert listed.code == 0, listed.stderr
    assert one_document(listed)["members"] == ["m\\xff"]
    synced = run_splice("sync", "--json", cwd=tmp_path, timeout=300)
    assert synced.code == 0, synced.stderr
    assert [p["path"] for p in one_document(synced)["projects"]] == ["m\\xff"]


def _socket(path: Path) -> None:
    """A Unix socket bound at ``path`` (the file stays after the socket is closed)."""
    import socket

    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))


@pytest.mark.parametrize(
    ("where", "kind", "argv", "codes"),
    [
        ("splice.lock", "fifo", ["list"], {"INVALID_PROJECT"}),
        ("splice.lock", "fifo", ["sync", "--check"], {"INVALID_PROJECT"}),
        ("splice.json", "fifo", ["sync", "--check"], {"INVALID_PROJECT", "NOT_A_PROJECT"}),
        (".splice/statcache.json", "fifo", ["install"], None),
        (".splice/state.lock", "fifo", ["install"], {"NOT_WRITABLE"}),
        (".splice/state.lock", "directory", ["install"], {"NOT_WRITABLE"}),
        (".splice/state.lock", "socket", ["install"], {"NOT_WRITABLE"}),
        (".splice", "file", ["install"], {"NOT_WRITABLE"}),
        (".splice/tmp", "file", ["install"], {"NOT_WRITABLE"}),
        (".splice/tmp/journal.json", "fifo", ["install"], {"NOT_WRITABLE"}),
    ],
)
def test_a_special_file_in_place_of_project_state_is_refused_at_once(
    tmp_path: Path, where: str, kind: str, argv: list[str], codes: set[str] | None
) -> None:
    """A FIFO where a project file is expected would make a plain ``open`` wait forever
    (with the project lock held); a directory or file in the wrong place must not be an
    INTERNAL_ERROR. Each is refused at once with a code, or ignored (``codes`` None: the
    stat cache, which is rebuilt)."""
    (tmp_path / "splice.json").write_text('{"specVersion": 1, "packages": {}}\n')
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    if where == "splice.json":
        path.unlink()
    make = {"fifo": os.mkfifo, "directory": os.mkdir, "file": Path.touch, "socket": _socket}
    make[kind](path)
    done = run_splice(*argv, "--json", cwd=tmp_path, timeout=60)
    document = one_document(done)
    if codes is None:
        assert done.code == 0, document
        return
    assert done.code == 1, document
    error = document.get("error") or document["projects"][0]["error"]
    assert error["code"] in codes, document
