"""Real back-end servers for tests and benchmarks: PostgreSQL and an S3 test double.

- PostgreSQL from the Debian package (``initdb`` + ``pg_ctl``): a throw-away cluster in a
  temporary directory, listening on 127.0.0.1 and a unix socket there, trust
  authentication for the user ``splice``, durability off (``fsync``) because it is thrown
  away. PostgreSQL refuses to run as root, so as root the cluster belongs to the
  ``postgres`` system user and its commands run through ``runuser``.
- S3: moto's standalone server (``python -m moto.server``) on 127.0.0.1. moto is a test
  double of S3, not a store for production.

Both are skipped by the tests with a clear reason when the programs are missing, unless
``SPLICE_TEST_REQUIRE_SERVICES=1`` (set by ``.ci/services.sh``), where missing means failed.
The switches are read once, at the start of the test session (``testing/switches.py``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from testing.switches import SWITCHES

PG_USER = "splice"
SYSTEM_USER = "postgres"  # owner of the cluster when the tests run as root
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
START_TIMEOUT = 60.0


def services_required() -> bool:
    return SWITCHES.require_services


def postgres_bin_dir() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: $SPLICE_TEST_PG_BIN, PATH, or Debian's layout."""
    candidates = []
    if SWITCHES.pg_bin is not None:
        candidates.append(SWITCHES.pg_bin)
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    debian = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(debian)
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


def missing_services() -> str | None:
    """Why the PostgreSQL + S3 back end cannot be tested here, or None when it can."""
    import importlib.util

    if postgres_bin_dir() is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl) not found; "
            "install Debian's postgresql package or run .ci/services.sh"
        )
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root needs runuser to start PostgreSQL as another user"
    for module, package in (
        ("psycopg", "psycopg[binary]"),
        ("psycopg_pool", "psycopg-pool"),
        ("boto3", "boto3"),
        ("moto", "moto[server]"),
        ("flask", "moto[server]"),
    ):
        if importlib.util.find_spec(module) is None:
            return f"Python package {package} is not installed"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    root: Path
    port: int
    bin_dir: Path
    _names: Iterator[int] = field(default_factory=itertools.count)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "registry") -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _as_cluster_owner(argv: list[str]) -> list[str]:
    return ["runuser", "-u", SYSTEM_USER, "--", *argv] if os.geteuid() == 0 else argv


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A throw-away PostgreSQL cluster on 127.0.0.1; stopped and deleted afterwards."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        raise RuntimeError(missing_services() or "PostgreSQL not found")
    root = Path(tempfile.mkdtemp(prefix="splice-pg-"))
    if os.geteuid() == 0:
        shutil.chown(root, SYSTEM_USER, SYSTEM_USER)
    data = root / "data"
    port = free_port()
    options = (
        f"-p {port} -c listen_addresses=127.0.0.1 -k {root} -c fsync=off "
        "-c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
    )
    try:
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                PG_USER,
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ]
        )
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(root / "server.log"),
                "-w",
                "-t",
                str(int(START_TIMEOUT)),
                "start",
            ]
        )
        try:
            yield PostgresServer(root, port, bin_dir)
        finally:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(
        _as_cluster_owner(argv),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{Path(argv[0]).name} failed: {done.stderr or done.stdout}")


@dataclass
class S3Server:
    endpoint: str
    process: subprocess.Popen[bytes]
    _names: Iterator[int] = field(default_factory=itertools.count)

    def env(self) -> dict[str, str]:
        """What a registry process needs to reach this server (plus SPLICE_REGISTRY_ARTIFACTS)."""
        return {**S3_CREDENTIALS, "SPLICE_REGISTRY_S3_ENDPOINT": self.endpoint}

    def client(self):  # -> botocore S3 client
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
            region_name=S3_CREDENTIALS["AWS_DEFAULT_REGION"],
        )

    def create_bucket(self, prefix: str = "registry") -> str:
        """A new empty bucket; its name."""
        name = f"{prefix}-{os.getpid()}-{next(self._names)}"
        self.client().create_bucket(Bucket=name)
        return name


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """moto's S3 server on a free 127.0.0.1 port; terminated afterwards."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **S3_CREDENTIALS},
        )
        endpoint = f"http://127.0.0.1:{port}"
        try:
            _wait_http(endpoint + "/moto-api/", process, log)
            yield S3Server(endpoint, process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_http(url: str, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except urllib.error.HTTPError:
            return  # it answers: up
        except OSError as exc:
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                output = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"moto server did not start: {output}") from exc
            time.sleep(0.1)
