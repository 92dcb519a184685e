"""A stop signal where a server command did not wait for one (testing/stop_signals.py).

- Start-up: SIGTERM is a server's normal stop (exit 0, splice_build/stopping.py), but one
  arriving before it served (the parse, the project's reading, the store's opening: a
  supervisor stopping a service that just started) ended ``splice mcp`` and ``splice
  registry serve`` 143 ``INTERRUPTED``, a failure to the supervisor. Measured with the real
  commands: SIGTERM 0.1 to 0.2 s after ``splice mcp`` started, 0.1 to 0.4 s after ``splice
  registry serve`` started. Other commands keep 143.
- Teardown: a further SIGTERM while ``splice mcp`` closed its warm pool (``kill`` sent more
  than once) raised into the close, leaving it half done, and ended the command 143 or, raised
  again inside the error report, with a traceback and exit 1 after "stopped by SIGTERM".
- The cut: a third signal as the stop cut the running calls left them uncut, and the stop
  then waited for them to their own timeout (60 s by default).
- An overrun: from the cut on further stop signals did nothing, for as long as the calls took
  to end: a call the cut did not reach (one waiting for the project's lock, which another
  ``splice`` process held, before project/locking.py ended such a wait on a cancellation)
  left a real ``splice mcp`` deaf to SIGTERM, ^C and SIGHUP alike, to be killed outright. Now a signal once the hold's bound (``HELD_SECONDS``) is over acts.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testing.cli import foreground_signals
from testing.mcp_clients import child_env

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")


def test_sigterm_at_each_unguarded_phase_of_a_server_stops_it_cleanly(tmp_path: Path) -> None:
    (tmp_path / "splice.json").write_text('{"specVersion": 1, "packages": {}}')
    env = child_env({"HOME": str(tmp_path), "SPLICE_HOME": str(tmp_path / ".splice")})
    done = subprocess.run(
        [sys.executable, "-m", "testing.stop_signals", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        preexec_fn=foreground_signals(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stderr.rsplit("\n", 2)[1])
    assert found["startup"] == [0, 0, 128 + signal.SIGTERM], done.stderr
    assert found["teardown"] == {"code": 0, "closed": True}, done.stderr
    assert found["cut"] is True, done.stderr
    assert found["overrun"] is True, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("interrupted by SIGTERM") == 1, done.stderr  # splice list's


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_second_stop_signal_cuts_an_http_servers_calls_and_they_are_answered(
    sig: signal.Signals,
) -> None:
    """Over HTTP a second SIGTERM changed nothing (the whole grace, up to an hour, was
    waited for) and a second ^C was uvicorn's force quit: the running calls' tasks were
    cancelled (a real ``splice mcp --http``: 500 Internal Server Error where stdio answers
    "Server stopping"). Now either cuts them at once, and they are answered."""
    import asyncio
    import socket
    import threading

    import httpx2 as httpx
    import uvicorn

    from splice_build.stopping import Stop, graceful_server, shutdown_seconds

    arrived, cut = threading.Event(), threading.Event()

    async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        await receive()  # type: ignore[operator]
        arrived.set()
        while not cut.is_set():
            await asyncio.sleep(0.005)
        await send({"type": "http.response.start", "status": 503, "headers": []})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": b"stopping"})  # type: ignore[operator]

    stop = Stop(grace=3600, cut=cut.set)
    config = uvicorn.Config(app, lifespan="off", log_level="critical")
    config.timeout_graceful_shutdown = shutdown_seconds(stop)
    server = graceful_server(config, stop, lambda: None)
    sock = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    serving = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])))
    serving.start()
    answers: list[int] = []
    caller = threading.Thread(
        target=lambda: answers.append(httpx.post(url, timeout=60).status_code)
    )
    caller.start()
    try:
        assert arrived.wait(30)
        server.handle_exit(sig, None)  # off the main thread: the handler's work is the same
        server.handle_exit(sig, None)
        serving.join(30)  # a bound for the old code only (SIGTERM: an hour's grace)
        caller.join(30)
        assert answers == [503] and not serving.is_alive()
    finally:
        cut.set()  # the old code's request ends
        serving.join()
        caller.join()


# The console script with a thread of the command's that outlives it (a worker stuck on a
# slow file system), ^C'd once the command has printed its answer.
_STUCK_THREAD = """
import sys, threading, time
import splice_build.cli.main as cli

command = cli.main

def main():
    threading.Thread(target=time.sleep, args=(60,)).start()
    code = command(["--version"])
    sys.stdout.flush()
    return code

def shutdown():
    print("joining", flush=True)
    join()

join, threading._shutdown = threading._shutdown, shutdown
cli.main = main
cli.entry()
"""


def test_a_stop_signal_while_the_end_waits_for_a_thread_ends_it_quietly() -> None:
    """``entry`` waits for the command's threads, as a normal exit does: ^C during that wait
    raised KeyboardInterrupt out of it, a traceback, and the process died by SIGINT after
    the command had answered. The command's own exit code stands now, at once."""
    process = subprocess.Popen(
        [sys.executable, "-c", _STUCK_THREAD],
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=foreground_signals(),
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("splice ")
    assert process.stdout.readline() == "joining\n"
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()  # the old end waited for the thread again, a minute
    assert process.returncode == 0, stderr
    assert stderr == ""


# The console script whose clean-up at exit is slow (a warm pool's close joins its thread for
# up to 10 s), stopped once the command has answered.
_SLOW_CLEAN_UP = """
import atexit, time
import splice_build.cli.main as cli

def clean_up():
    print("cleaning up", flush=True)
    time.sleep(60)

atexit.register(clean_up)
cli.entry()
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_during_the_clean_ups_at_exit_ends_them_quietly(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """The signal was raised into the ``atexit`` handler it landed in: "Exception ignored in
    atexit callback" and a ``Terminated`` traceback once the command had answered, the
    handler half done. The process ends at once now, with the command's exit code."""
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_CLEAN_UP, "--json", "config"],
        env=child_env({"SPLICE_HOME": str(tmp_path / "home")}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=foreground_signals(),
    )
    assert process.stdout is not None
    answer = ""
    for line in process.stdout:  # up to the clean-up, or the end of a process that died
        if line == "cleaning up\n":
            break
        answer += line
    process.send_signal(sig)
    try:
        _, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert json.loads(answer)["home"] == str(tmp_path / "home")
    assert (process.returncode, stderr) == (0, "")
