"""Local HTTP servers on 127.0.0.1 and a fake DNS resolver for the network-guard tests.

``NetServer`` answers on a few routes and records every request it receives (so a test can
assert that a refused target saw nothing):

- ``/echo``: JSON ``{method, path, headers, body}`` of the request;
- ``/redirect?to=URL&status=302``: a redirect to ``to``;
- ``/chain/N``: ``N`` same-origin redirects, then ``/echo``;
- ``/slow?ms=N``: headers, then the body after N ms;
- ``/big?bytes=N``: N bytes of body; ``/gzip-bomb?bytes=N``: gzip of N zero bytes;
- ``/gzip``, ``/deflate``, ``/deflate-raw``, ``/br``: ``{"coding": ...}`` in that encoding.

``drip_server`` sends a scripted answer slowly, piece by piece (the deadline tests).

``httpd.max_active`` is the most requests it handled at the same time.

``FakeResolver`` is the Python guard's resolver hook; ``resolver_table`` builds the same
answers for ``SpliceRuntime(_unsafe_test_resolver=...)``. Test code only: nothing in
``splice_build`` imports this module.
"""

from __future__ import annotations

import gzip
import json
import socket
import sys
import threading
import time
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

# brotli of b'{"coding":"br"}' (made with Node's zlib.brotliCompressSync; Python has no brotli).
BROTLI_BODY = bytes.fromhex("0b07807b22636f64696e67223a226272227d03")


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        return

    def _reply(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._finish()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        with self.server.lock:
            self.server.active += 1
            self.server.max_active = max(self.server.max_active, self.server.active)
        self._finished = False
        try:
            self._route()
        finally:
            self._finish()

    def _finish(self) -> None:
        """This request no longer counts as active: called before the answer's last bytes
        are written, since a client may send its next request as soon as they arrive (on
        a loaded machine before this thread ran on, a slot's next request was counted
        beside the one that had freed it)."""
        with self.server.lock:
            if not self._finished:
                self._finished = True
                self.server.active -= 1

    def _route(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append(Seen(self.command, self.path, headers))
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        route = url.path
        if route == "/redirect":
            status = int(query.get("status", "302"))
            self._reply(status, b"", {"Location": query["to"]})
        elif route.startswith("/chain/"):
            left = int(route.rsplit("/", 1)[1])
            to = "/echo" if left <= 1 else f"/chain/{left - 1}"
            self._reply(302, b"", {"Location": to})
        elif route == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.flush()
            time.sleep(int(query.get("ms", "2000")) / 1000)
            self._finish()
            self.wfile.write(b"ok")
        elif route == "/big":
            self._reply(200, b"x" * int(query["bytes"]))
        elif route == "/gzip-bomb":
            bomb = gzip.compress(b"\0" * int(query["bytes"]))
            self._reply(200, bomb, {"Content-Encoding": "gzip"})
        elif route in ("/gzip", "/deflate", "/deflate-raw", "/br"):
            self._reply(200, *_encoded(route[1:]))
        else:
            echo = {
                "method": self.command,
                "path": self.path,
                "headers": headers,
                "body": body.decode("utf-8", "replace"),
            }
            data = json.dumps(echo).encode()
            self._reply(200, data, {"Content-Type": "application/json"})

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle


def _encoded(coding: str) -> tuple[bytes, dict[str, str]]:
    raw = json.dumps({"coding": coding}, separators=(",", ":")).encode()
    if coding == "gzip":
        return gzip.compress(raw), {"Content-Encoding": "gzip"}
    if coding == "deflate":
        return zlib.compress(raw), {"Content-Encoding": "deflate"}
    if coding == "deflate-raw":
        packer = zlib.compressobj(wbits=-15)
        return packer.compress(raw) + packer.flush(), {"Content-Encoding": "deflate"}
    return BROTLI_BODY, {"Content-Encoding": "br"}


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: str = "127.0.0.1") -> None:
        super().__init__((address, 0), _Handler)
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.active = 0
        self.max_active = 0  # the most requests handled at the same time

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that hangs up mid-response (the size and time limit tests) is expected;
        any other error is printed as usual."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class NetServer:
    """A running server; ``url(path)`` builds ``http://127.0.0.1:<port><path>``."""

    httpd: _Server
    port: int

    @property
    def seen(self) -> list[Seen]:
        return self.httpd.seen

    def url(self, path: str = "/echo", host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def paths(self) -> list[str]:
        return [s.path for s in self.httpd.seen]


@contextmanager
def serve(address: str = "127.0.0.1") -> Iterator[NetServer]:
    """Run a NetServer on ``address`` in a thread for the duration of the block."""
    httpd = _Server(address)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield NetServer(httpd, httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextmanager
def serve_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """``handler`` served on 127.0.0.1 by a thread per request; yields the base URL
    (``http://127.0.0.1:PORT``) and stops the server when the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Drip:
    """A running ``drip_server``: its port, and whether it sent every piece."""

    port: int
    finished: threading.Event


@contextmanager
def drip_server(pieces: Iterable[bytes], pause_s: float) -> Iterator[Drip]:
    """A raw server on 127.0.0.1 for the deadline tests: it answers one connection by sending
    ``pieces`` one at a time, ``pause_s`` apart (``finished`` is set once the last is sent), then
    closes it; it stops early when the client hangs up or the block ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    finished = threading.Event()

    def drip() -> None:
        try:
            connection, _ = listener.accept()
        except OSError:
            return
        with connection:
            connection.recv(65536)
            for index, piece in enumerate(pieces):
                if index:
                    time.sleep(pause_s)
                if stop.is_set():
                    return
                try:
                    connection.sendall(piece)
                except OSError:
                    return
            finished.set()

    worker = threading.Thread(target=drip, daemon=True)
    worker.start()
    try:
        yield Drip(listener.getsockname()[1], finished)
    finally:
        stop.set()
        listener.close()


@contextmanager
def unix_listener(path: Path) -> Iterator[list[bytes]]:
    """A UNIX socket that records whatever any client sends (it must stay empty)."""
    received: list[bytes] = []
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen(4)
    sock.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(0.5)
                try:
                    received.append(conn.recv(65536) or b"<connected>")
                except OSError:
                    received.append(b"<connected>")

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        stop.set()
        thread.join(2)
        sock.close()


class FakeResolver:
    """``resolver(name)`` for the Python guard: the n-th call for a name returns the n-th
    answer list of ``table[name]`` (the last one repeats); unknown names fail like DNS."""

    def __init__(self, table: Mapping[str, Sequence[Sequence[str]]]) -> None:
        self._table = {name: [list(a) for a in answers] for name, answers in table.items()}
        self.calls: list[str] = []

    def __call__(self, name: str) -> list[str]:
        self.calls.append(name)
        answers = self._table.get(name)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, f"fake resolver: {name} not found")
        n = self.calls.count(name) - 1
        return answers[min(n, len(answers) - 1)]


def resolver_table(table: Mapping[str, Sequence[Sequence[str]]]) -> dict[str, list[list[str]]]:
    """The same table in the job's JSON shape (``SpliceRuntime(_unsafe_test_resolver=...)``)."""
    return {name: [list(a) for a in answers] for name, answers in table.items()}


@contextmanager
def serve_tls(tmp_dir: Path, hostname: str = "localhost") -> Iterator[tuple[int, Path]]:
    """An HTTPS echo server on 127.0.0.1 whose certificate (for ``hostname`` and 127.0.0.1)
    is signed by a fresh test CA; yields ``(port, ca_pem_path)``."""
    import ssl

    cert_path, key_path, ca_path = make_certificates(tmp_dir, [hostname])
    httpd = _Server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], ca_path
    finally:
        httpd.shutdown()
        httpd.server_close()


def make_certificates(tmp_dir: Path, hostnames: Sequence[str]) -> tuple[Path, Path, Path]:
    """A fresh test CA and a server certificate it signs for ``hostnames`` and 127.0.0.1;
    ``(cert.pem, key.pem, ca.pem)`` in ``tmp_dir``. Nothing trusts that CA unless told to."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "splice test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName(name) for name in hostnames]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostnames[0])]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_path, key_path, ca_path = tmp_dir / "cert.pem", tmp_dir / "key.pem", tmp_dir / "ca.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path, ca_path
