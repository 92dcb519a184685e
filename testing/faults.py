"""Real faults for the fault-injection tests (tests/faults/): a full disk and a read-only tree.

Both live in a private user + mount namespace (``unshare -rm``) held open by a sleeping
process, so nothing leaks into the test machine's mounts and no root is needed:

- :class:`SmallDisk` mounts a size-capped tmpfs; a filler file takes all but a few bytes, so
  the next write gets ``ENOSPC`` from the kernel, as on a real full disk. Deleting the filler
  removes the fault.
- :class:`ReadOnlyView` bind-mounts a directory read-only over itself (``EROFS`` on every
  write, root included), and ``release`` unmounts it.

Commands run inside with ``nsenter``; the test reads the files through ``/proc/<pid>/root``,
the namespace's own view of the file system.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from testing.cli import Completed, splice_executable


def namespaces_available() -> bool:
    """Whether this machine lets an unprivileged process make a user + mount namespace."""
    if shutil.which("unshare") is None or shutil.which("nsenter") is None:
        return False
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && true"],
        capture_output=True,
        timeout=10,
    )
    return done.returncode == 0


class Namespace:
    """A user + mount namespace kept alive by ``sleep``; commands enter it with ``nsenter``."""

    def __init__(self, setup: str) -> None:
        # `setup` runs inside before the holder sleeps: the mounts the test wants.
        self.process = subprocess.Popen(
            [
                "unshare",
                "-rm",
                "--propagation",
                "private",
                "sh",
                "-c",
                f"{setup} && echo ready && exec sleep 600",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != "ready":
            self.process.kill()
            _, err = self.process.communicate()
            raise AssertionError(f"BUG: namespace setup failed: {err}")

    def view(self, path: Path) -> Path:
        """``path`` as the namespace sees it, readable from outside."""
        return Path(f"/proc/{self.process.pid}/root") / Path(path).relative_to("/")

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> Completed:
        full = [
            "nsenter",
            "-t",
            str(self.process.pid),
            "-U",
            "-m",
            "--preserve-credentials",
            "sh",
            "-c",
            'cd "$0" && exec "$@"',
            str(cwd),
            *argv,
        ]
        done = subprocess.run(
            full,
            env={**os.environ, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return Completed(done.returncode, done.stdout, done.stderr)

    def splice(self, *args: str, cwd: Path, env: Mapping[str, str] | None = None) -> Completed:
        return self.run([splice_executable(), *args], cwd=cwd, env=env)

    def sh(self, script: str, *, cwd: Path = Path("/")) -> Completed:
        done = self.run(["sh", "-c", script], cwd=cwd)
        assert done.code == 0, done.stderr
        return done

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


@contextmanager
def small_disk(mount: Path, *, size: str = "8m") -> Iterator[Namespace]:
    """A tmpfs of ``size`` at the (existing, empty) directory ``mount``, in its own namespace."""
    ns = Namespace(f"mount -t tmpfs -o size={size} tmpfs {mount}")
    try:
        yield ns
    finally:
        ns.close()


def fill(ns: Namespace, mount: Path, *, leave: int = 0) -> None:
    """Take every free byte of the tmpfs at ``mount`` but about ``leave`` into ``.filler``.

    With ``leave=0`` the filler is topped up in ever smaller writes until not one byte fits.
    """
    free = os.statvfs(ns.view(mount)).f_bavail * os.statvfs(ns.view(mount)).f_frsize
    with open(ns.view(mount) / ".filler", "ab", buffering=0) as handle:
        with suppress(OSError):
            handle.write(b"\0" * max(free - leave, 0))
        if leave == 0:
            for chunk in (65536, 4096, 512, 1):
                with suppress(OSError):
                    while True:
                        handle.write(b"\0" * chunk)


def unfill(ns: Namespace, mount: Path) -> None:
    (ns.view(mount) / ".filler").unlink()


@contextmanager
def read_only(directory: Path) -> Iterator[Namespace]:
    """``directory`` bind-mounted read-only over itself inside a private namespace."""
    ns = Namespace(f"mount --bind {directory} {directory} && mount -o remount,bind,ro {directory}")
    try:
        yield ns
    finally:
        ns.close()


class CuttingProxy:
    """A TCP relay on 127.0.0.1 that stops a stream part-way, so a test can kill the server.

    Bytes are relayed both ways unchanged until one direction of a connection has carried
    ``cut_after`` bytes (``"down"``: server to client, a download; ``"up"``: client to
    server, a publish). That connection then stalls: ``reached`` is set, and once ``release``
    is set (the test has killed the server) both sockets are closed, so the client sees the
    server die in the middle of the body, as it would without the proxy.
    """

    def __init__(self, upstream_port: int, *, cut_after: int, direction: str) -> None:
        assert direction in ("down", "up")
        self.upstream_port = upstream_port
        self.cut_after = cut_after
        self.direction = direction
        self.reached = threading.Event()
        self.release = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    def _start(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._start(self._pipe, server, client, self.direction == "down")
            self._start(self._pipe, client, server, self.direction == "up")

    def _pipe(self, source: socket.socket, sink: socket.socket, cutting: bool) -> None:
        carried = 0
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    sink.shutdown(socket.SHUT_WR)
                    return
                if cutting and carried + len(data) > self.cut_after:
                    sink.sendall(data[: max(self.cut_after - carried, 0)])
                    self.reached.set()
                    self.release.wait(30)
                    _hang_up(source, sink)
                    return
                sink.sendall(data)
                carried += len(data)
        except OSError:
            _hang_up(source, sink)

    def close(self) -> None:
        self.release.set()
        self.listener.close()


def _hang_up(*socks: socket.socket) -> None:
    """Shut down (which wakes the other relay thread's recv) and close both ends."""
    for sock in socks:
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def capability_free_available() -> bool:
    """Whether a process can enter a new user namespace with no ID mapped (``unshare -U``):
    there it keeps its IDs but no capability, so root too is refused by a file's mode."""
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-U", "true"], capture_output=True, timeout=10)
    return done.returncode == 0


def splice_without_capabilities(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> Completed:
    """``splice ARGS`` bound by file modes as an ordinary user is (``unshare -U``)."""
    done = subprocess.run(
        ["unshare", "-U", splice_executable(), *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    return Completed(done.returncode, done.stdout, done.stderr)
