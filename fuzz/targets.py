"""The fuzz targets: one per parser of outside input, each over the real entry point.

A target is a ``setup()`` returning ``check(data: bytes) -> None``. ``check`` feeds the bytes to
the public entry point and returns when the result is an accepted value or a documented
refusal (a ``SpliceError`` with one of the target's codes, or the documented exception of that
parser). Anything else escapes: an unexpected exception, or ``Finding`` for a broken invariant
(a 500, an internal error, a differential disagreement, too much time per byte).

Setup work (temporary directories, a registry, Node processes) happens once per process, so
the per-input cost is the parser's own.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from fuzz.scratch import scratch_dir

Check = Callable[[bytes], None]
ROOT = Path(__file__).resolve().parent.parent
JS = Path(__file__).resolve().parent / "js"


class Finding(AssertionError):
    """An invariant of a target broke (not an exception of the code under test)."""


@dataclass(frozen=True)
class Target:
    name: str
    setup: Callable[[], Check]
    doc: str
    max_len: int = 4096
    dictionary: str | None = None  # a libFuzzer dictionary in fuzz/dict/
    # The CI short run (tests/fuzz/test_short_runs.py): 3 s, or at most this many inputs for
    # a parser fast enough that a few hundred cover its seeds and their mutations.
    short_runs: int | None = None


def _scratch() -> Path:
    """A private directory on a RAM file system when there is one (file readers write per input)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return scratch_dir("files", base)


def _expect_codes(exc: BaseException, codes: set[str]) -> None:
    """Re-raise ``exc`` as a finding unless it is a SpliceError with one of ``codes``."""
    from splice_build.errors import SpliceError

    if not isinstance(exc, SpliceError):
        raise exc
    if str(exc.code) not in codes:
        raise Finding(f"unexpected error code {exc.code}: {exc}") from exc


# archives ------------------------------------------------------------------------------------
def _archive() -> Check:
    """First byte 0: the bytes as an artifact; else a valid gzip around hostile tar bytes."""
    from splice_build.errors import SpliceError
    from splice_build.spec.archive import read_archive
    from splice_build.spec.gzip_stream import gzip_stored
    from splice_build.spec.package import validate_package_files

    root = _scratch()

    def check(data: bytes) -> None:
        if not data:
            return
        artifact = data[1:] if data[0] % 2 == 0 else gzip_stored(data[1:])
        try:
            files = read_archive(artifact)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_PACKAGE"})
            return
        if not isinstance(files, dict):
            raise Finding("read_archive returned no mapping")
        _write_side_by_side(files, root)
        try:
            validate_package_files(files)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_PACKAGE", "INVALID_MANIFEST", "INVALID_BUNDLE"})

    return check


def _write_side_by_side(files: dict[str, bytes], root: Path) -> None:
    """Accepted files must be writable into one directory, the way an install writes its
    staging copy (``_write_files`` in splice_build/install/installer.py): a file and a
    directory of one name, or one file twice, are a finding."""
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(dir=root))
    try:
        for relative, content in files.items():
            path = directory.joinpath(*relative.split("/"))
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "xb") as handle:
                handle.write(content)
    except OSError as exc:
        raise Finding(f"accepted files cannot be written side by side: {exc}") from exc
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _manifest() -> Check:
    from splice_build.errors import SpliceError
    from splice_build.spec.manifest import Manifest

    def check(data: bytes) -> None:
        try:
            manifest = Manifest.from_json(data)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_MANIFEST"})
            return
        # An accepted manifest must survive its own serialization.
        Manifest.from_dict(manifest.to_json())

    return check


# project files -------------------------------------------------------------------------------
def _repeats_a_key(data: bytes) -> bool:
    """Whether the JSON text ``data`` gives a key twice in one object (False for no JSON)."""
    repeated = False

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeated
        keys = [key for key, _ in pairs]
        repeated = repeated or len(set(keys)) != len(keys)
        return dict(pairs)

    try:
        json.loads(data.decode("utf-8-sig"), object_pairs_hook=pairs_hook)
    except (ValueError, RecursionError):
        return False
    return repeated


def _committed_file(name: str, load: Callable[[Path], object]) -> Check:
    """``splice.json`` or ``splice.lock``: INVALID_PROJECT or read, and never read when it
    gives a key twice in one object (the repeat is named)."""
    from splice_build.errors import SpliceError

    root = _scratch()

    def check(data: bytes) -> None:
        (root / name).write_bytes(data)
        try:
            load(root)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_PROJECT"})
            return
        if _repeats_a_key(data):
            raise Finding(f"{name} giving a key twice was read")

    return check


def _splice_json() -> Check:
    from splice_build.project.project_file import load_project_file

    return _committed_file("splice.json", load_project_file)


def _splice_lock() -> Check:
    from splice_build.project.lockfile import load_lockfile

    return _committed_file("splice.lock", load_lockfile)


def _pyproject() -> Check:
    from splice_build.errors import SpliceError
    from splice_build.project.workspace import read_config

    path = _scratch() / "pyproject.toml"

    def check(data: bytes) -> None:
        path.write_bytes(data)
        try:
            read_config(path)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_CONFIG"})

    return check


# sandbox frames ------------------------------------------------------------------------------
def _frames() -> Check:
    from splice_build.runtime.protocol import ProtocolViolation, parse_child_message

    def check(data: bytes) -> None:
        try:
            parse_child_message(data)
        except ProtocolViolation:
            return

    return check


# MCP -----------------------------------------------------------------------------------------
def _mcp_server() -> tuple[Any, list[str]]:
    """A real MCP server over the installed-skills backend of an empty project."""
    from splice_build.mcp.backend import INSTRUCTIONS, InstalledBackend
    from splice_build.mcp.interface import ServerInfo
    from splice_build.mcp.protocol import Server
    from splice_build.project.project_file import init_project
    from splice_build.sdk import Splice

    scratch = _scratch()
    root, _created = init_project(scratch / "project")
    splice = Splice(root, home=scratch / "home")
    internal: list[str] = []
    server = Server(
        InstalledBackend(splice), ServerInfo(instructions=INSTRUCTIONS), log=internal.append
    )
    return server, internal


def _check_rpc_answer(answer: object) -> None:
    if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0":
        raise Finding(f"not a JSON-RPC answer: {answer!r:.200}")
    if ("result" in answer) == ("error" in answer):
        raise Finding(f"answer needs exactly one of result and error: {answer!r:.200}")


def _mcp_stdio() -> Check:
    import io

    from splice_build.mcp.transport.stdio import serve_stdio

    server, internal = _mcp_server()

    def check(data: bytes) -> None:
        out = io.BytesIO()
        serve_stdio(
            server, io.BytesIO(data), out, log=lambda _m: None, max_calls=4, max_line_bytes=2048
        )
        if internal:
            message = internal[0]
            internal.clear()
            raise Finding(message)
        for line in out.getvalue().splitlines():
            answer = json.loads(line)
            for item in answer if isinstance(answer, list) else [answer]:
                _check_rpc_answer(item)

    return check


class _Asgi:
    """Drives an ASGI app in-process, one HTTP request per call (what uvicorn would hand it)."""

    _TOKEN = frozenset(b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")

    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()

    def request(self, data: bytes, substitutions: dict[bytes, bytes]) -> tuple[int, bytes]:
        """``data`` is ``METHOD target\\nName: value\\n…\\n\\nbody`` (loosely; fuzzed)."""
        for key, value in substitutions.items():
            data = data.replace(key, value)
        head, _, body = data.partition(b"\n\n")
        lines = head.split(b"\n")
        method, _, target = lines[0].partition(b" ")
        method = (
            bytes(
                c for c in method.upper() if c in self._TOKEN.union(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
            )
            or b"GET"
        )
        target = bytes(c for c in target.strip() if 0x21 <= c < 0x7F) or b"/"
        raw_path, _, query = target.partition(b"?")
        headers: list[tuple[bytes, bytes]] = []
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            name = bytes(c for c in name.lower() if c in self._TOKEN)
            if not sep or not name:
                continue
            value = bytes(c for c in value.strip(b" \t") if c not in b"\r\n\x00")
            headers.append((name, value))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method.decode("ascii"),
            "scheme": "http",
            "path": unquote(raw_path.decode("ascii")),
            "raw_path": raw_path,
            "query_string": query,
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        return self.loop.run_until_complete(asyncio.wait_for(self._call(scope, body), 10))

    async def _call(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        pending = [{"type": "http.request", "body": body, "more_body": False}]
        status: list[int] = []
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            if pending:
                return pending.pop()
            # The client stays connected until it has its answer, as with a real server,
            # whose receive blocks here: a disconnect at once would read as a client that
            # left before its call ran (the app then answers nobody).
            await asyncio.Event().wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, send)
        if len(status) != 1:
            raise Finding(f"{len(status)} response starts")
        return status[0], b"".join(chunks)


def _mcp_http() -> Check:
    import hashlib

    from splice_build.mcp.admission import AsyncAdmission
    from splice_build.mcp.transport.auth_throttle import AuthThrottle, ThrottlePolicy
    from splice_build.mcp.transport.http import build_app

    server, internal = _mcp_server()
    admission = AsyncAdmission(4)  # the server's bound on tool calls, as `splice mcp --http`
    # No throttle: after ten inputs with a wrong token every later one would be refused 429
    # before it is read, whatever it holds (tests/mcp/test_auth_throttle.py tests it).
    unthrottled = AuthThrottle(ThrottlePolicy(failures=0))
    digest = hashlib.sha256(b"fuzz-token").digest()
    asgi = _Asgi(build_app(server, digest, admission, throttle=unthrottled))

    def check(data: bytes) -> None:
        status, body = asgi.request(data, {b"@TOKEN@": b"fuzz-token"})
        if internal:
            message = internal[0]
            internal.clear()
            raise Finding(message)
        if status >= 500:
            raise Finding(f"status {status}: {body[:200]!r}")
        if status == 200:
            answer = json.loads(body)
            for item in answer if isinstance(answer, list) else [answer]:
                _check_rpc_answer(item)

    return check


def _publish_example(service: Any, token: str) -> None:
    """The example skill as ``@fuzzer/example``, so reads find a package, versions, a download."""
    from splice_build.registry.service import admin
    from splice_build.registry.service.auth import Caller
    from splice_build.spec.archive import pack_archive

    admin.set_owner(service.deps, "fuzzer", "fuzzer")
    example = ROOT / "splice_build" / "skills" / "example"
    files = {
        p.relative_to(example).as_posix(): p.read_bytes() for p in example.rglob("*") if p.is_file()
    }
    manifest = json.loads(files["manifest.json"])
    manifest["namespace"] = "fuzzer"
    files["manifest.json"] = json.dumps(manifest).encode("utf-8")
    caller = Caller(authorization=f"Bearer {token}", client="127.0.0.1")
    service.publish(caller, pack_archive(files))


def _registry_http() -> Check:
    import logging

    from splice_build.registry.http.app import create_app
    from splice_build.registry.service import admin
    from splice_build.registry.service.ratelimit import RateLimits
    from splice_build.registry.service.tokens import TokenRequest
    from splice_build.registry.storage import open_service

    service = open_service(
        _scratch() / "registry", limits=RateLimits(failed_auth=0, publishes=0, requests=0, admin=0)
    )
    admin.create_user(service.deps, "fuzzer")
    token = admin.create_token(service.deps, "fuzzer", TokenRequest(can_manage=True))["token"]
    _publish_example(service, token)
    errors: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            errors.append(record.getMessage())

    logger = logging.getLogger("splice_build.registry")
    logger.addHandler(_Collect(logging.ERROR))
    logger.propagate = False
    asgi = _Asgi(create_app(service))

    def check(data: bytes) -> None:
        status, body = asgi.request(data, {b"@TOKEN@": token.encode("ascii")})
        if errors:
            message = errors[0]
            errors.clear()
            raise Finding(message)
        if status >= 500 and status != 503:
            raise Finding(f"status {status}: {body[:200]!r}")

    return check


# a hostile registry's answers (the client side) ------------------------------------------------
_PACKAGE = "@fuzzer/example"
# What the client asks, by the input's first byte: every route whose answer it reads.
_CLIENT_CALLS: tuple[Callable[[Any], object], ...] = (
    lambda c: c.search("example"),
    lambda c: c.package(_PACKAGE),
    lambda c: c.versions(_PACKAGE),
    lambda c: c.version(_PACKAGE, "1.0.0"),
    lambda c: c.provenance(_PACKAGE, "1.0.0"),
    lambda c: c.download(_PACKAGE, "1.0.0"),
    lambda c: c.namespace("fuzzer"),
    lambda c: c.keys("fuzzer"),
    lambda c: c.whoami(),
    lambda c: c.tokens(),
    lambda c: c.create_token(label="fuzz"),
    lambda c: c.revoke_token("t1"),
    lambda c: c.set_maintainer("fuzzer", "someone", add=True),
    lambda c: c.add_key("fuzzer", "A" * 43 + "="),
    lambda c: c.add_signature(_PACKAGE, "1.0.0", "ed25519:" + "0" * 16, "A" * 86 + "=="),
    lambda c: c.publish(b"\x1f\x8b fuzz"),
)
_LISTS_VERSIONS = (1, 2)  # package, versions
# Every code a registry's answer may become (registry/client/statuses.py, http.py).
_CLIENT_CODES = {
    "REGISTRY_ERROR",
    "REGISTRY_UNREACHABLE",
    "REGISTRY_UNAVAILABLE",
    "UNAUTHENTICATED",
    "FORBIDDEN",
    "PACKAGE_NOT_FOUND",
    "VERSION_EXISTS",
    "INVALID_PACKAGE",
    "RATE_LIMITED",
    "KEY_EXISTS",
    "KEY_REVOKED",
    "KEY_NOT_REGISTERED",
    "INVALID_SIGNATURE",
    "INTEGRITY_MISMATCH",
}
_SHOWN_TEXT = 1100  # statuses.MAX_ERROR_TEXT and its prefix: a registry's words are cut short


class _Wire:
    """A socket for ``http.client``: the answer's bytes as they would arrive."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, *_args: Any, **_kwargs: Any) -> Any:
        import io

        return io.BytesIO(self.data)


def _wire_adapter() -> Any:
    """The ``requests`` transport with the socket left out: each answer is parsed by
    ``http.client`` and wrapped by ``urllib3`` as ``HTTPConnection.getresponse`` does, so
    headers (cookies, ``content-length``, ``content-encoding``) reach the client as a real
    server's would."""
    import http.client

    import requests
    import urllib3

    class Wire(requests.adapters.HTTPAdapter):
        answer = b""

        def send(self, request: Any, *_args: Any, **_kwargs: Any) -> requests.Response:
            answer = http.client.HTTPResponse(_Wire(self.answer), method=request.method)
            try:
                answer.begin()
            except (http.client.HTTPException, OSError) as exc:  # urllib3: a ProtocolError
                raise requests.exceptions.ConnectionError(exc, request=request) from exc
            try:
                response = self._wrapped(request, answer)
            except urllib3.exceptions.InvalidHeader as exc:  # as HTTPAdapter.send maps it
                raise requests.exceptions.InvalidHeader(exc, request=request) from exc
            return self.build_response(request, response)

        @staticmethod
        def _wrapped(request: Any, answer: http.client.HTTPResponse) -> urllib3.HTTPResponse:
            return urllib3.HTTPResponse(
                body=answer,
                headers=urllib3.HTTPHeaderDict(answer.msg.items()),
                status=answer.status,
                version=answer.version,
                reason=answer.reason,
                preload_content=False,
                decode_content=True,
                original_response=answer,
                enforce_content_length=True,
                request_method=request.method,
                request_url=request.url,
            )

    return Wire()


def _registry_client() -> Check:
    """After a first byte choosing the route: a status line, header lines, an empty line and
    the body, lines ending in LF. The header lines are sent as they are (anything but a line
    break); a status that is not three digits from 100 to 599 is 200."""
    from splice_build.errors import SpliceError
    from splice_build.registry.client.http import HttpRegistryClient
    from splice_build.spec.semver import latest_version

    adapter = _wire_adapter()

    def check(data: bytes) -> None:
        if not data:
            return
        index = data[0] % len(_CLIENT_CALLS)
        head, _, body = data[1:].partition(b"\n\n")
        lines = head.split(b"\n")
        digits = bytes(c for c in lines[0][:3] if 0x30 <= c <= 0x39)
        status = digits if len(digits) == 3 and digits[0] in b"12345" else b"200"
        adapter.answer = b"\r\n".join([b"HTTP/1.1 " + status + b" Fuzz", *lines[1:], b"", body])
        client = HttpRegistryClient("http://127.0.0.1:9", token="fuzz-token-0123456789")
        client._session.mount("http://", adapter)
        try:
            answer = _CLIENT_CALLS[index](client)
        except SpliceError as exc:
            _expect_codes(exc, _CLIENT_CODES)
            shown = [exc.message, *exc.details, exc.hint or ""]
            if len(exc.details) > 60 or max(map(len, shown)) > _SHOWN_TEXT:
                raise Finding(f"{exc.code}: a registry's words were not cut short") from exc
            return
        finally:
            client.close()
        if index in _LISTS_VERSIONS:  # what resolution does with a checked version list
            assert isinstance(answer, dict)
            latest_version(entry["version"] for entry in answer["versions"])

    return check


# capability arguments from a sandboxed tool ----------------------------------------------------
def _capability_args() -> Check:
    """The first byte picks a capability, the rest is its ``args`` as the tool's frame carries
    them: decoded by the parent's frame decoder, then ``Broker.call`` with no provider (so
    nothing leaves the machine: argument checks, target checks, the cache key, the answer)."""
    from splice_build.broker.broker import Broker
    from splice_build.broker.capabilities import (
        MAX_LISTED_PROBLEMS,
        MAX_PROBLEM_CHARACTERS,
        known_capabilities,
    )
    from splice_build.broker.keys import ProviderKeys
    from splice_build.runtime.protocol import ProtocolViolation, decode_json

    capabilities = known_capabilities()
    broker = Broker(keys=ProviderKeys({}, {}), providers={})

    def check(data: bytes) -> None:
        if not data:
            return
        capability = capabilities[data[0] % len(capabilities)]
        try:
            args = decode_json(data[1:])
        except ProtocolViolation:
            return
        answer = broker.call(
            {"package": "@fuzzer/p", "tool": "t", "capability": capability, "args": args}
        )
        json.dumps(answer, allow_nan=False)  # goes back to the tool as a frame
        if answer.get("code") not in ("INVALID_INPUT", "CAPABILITY_UNAVAILABLE"):
            raise Finding(f"{capability}: unexpected answer {answer!r:.300}")
        details = answer.get("details", [])
        if len(details) > MAX_LISTED_PROBLEMS + 1 or any(
            len(d) > MAX_PROBLEM_CHARACTERS for d in details
        ):
            raise Finding(f"{capability}: problems not bounded: {details!r:.300}")

    return check


# signing key files ----------------------------------------------------------------------------
def _key_files() -> Check:
    """First byte even: the rest as a private key file in ``SPLICE_HOME/keys`` (``keys list``,
    ``keys register``, ``publish --sign``); odd: as the public key file of ``keys trust``."""
    from types import SimpleNamespace

    from splice_build.cli.commands.keys import _trusted_key_id
    from splice_build.errors import SpliceError
    from splice_build.project.keys import load_key_file
    from splice_build.spec.signing import is_key_id

    root = _scratch()
    path = root / "fuzz.key"
    ctx = SimpleNamespace(cwd=root)

    def check(data: bytes) -> None:
        if not data:
            return
        path.write_bytes(data[1:])
        try:
            if data[0] % 2 == 0:
                key = load_key_file(path, name="fuzz")
                if not is_key_id(key.key_id):
                    raise Finding(f"a loaded key has the id {key.key_id!r}")
            elif not is_key_id(_trusted_key_id(path.name, ctx)):  # type: ignore[arg-type]
                raise Finding("keys trust took a file for a malformed key id")
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_CONFIG"} if data[0] % 2 == 0 else {"SIGNATURE_INVALID"})

    return check


# semantic versions and ranges -----------------------------------------------------------------
def _semver_run() -> Callable[[str], object]:
    from splice_build.spec.semver import is_valid_range, is_valid_version

    return lambda text: (is_valid_version(text), is_valid_range(text))


def _semver_parts(text: str) -> None:
    """Each line's refusal has its code; what parses writes back as it was read; ranges hold
    their own base; precedence_key orders as ``<`` does (the registry's index relies on it)."""
    from splice_build.errors import SpliceError
    from splice_build.spec.semver import (
        Range,
        Version,
        max_satisfying,
        precedence_key,
        unsafe_identifiers,
    )

    versions = []
    for part in text.split("\n")[:4]:
        try:
            version = Version.parse(part)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_VERSION"})
        else:
            if str(version) != part or Version.parse(str(version)) != version:
                raise Finding(f"{part!r} does not write back as itself: {version}")
            versions.append(version)
        try:
            rng = Range.parse(part)
        except SpliceError as exc:
            _expect_codes(exc, {"INVALID_RANGE"})
            continue
        base = rng.base
        if (
            base is not None
            and (rng.is_exact or not base.is_prerelease)
            and not rng.satisfies(base)
        ):
            raise Finding(f"{part!r} does not hold its own base version")
        max_satisfying(versions, rng)
    exact = [v for v in versions if not unsafe_identifiers(v)]
    for a, b in itertools.combinations(exact, 2):
        keys = (precedence_key(a), precedence_key(b))
        if (a < b, a == b) != (keys[0] < keys[1], keys[0] == keys[1]):
            raise Finding(f"precedence_key orders {a} and {b} unlike <: {keys}")


def _semver() -> Check:
    timed = _timed_target("semver")

    def check(data: bytes) -> None:
        _semver_parts(_text(data))
        timed(data)

    return check


# the no-op stat cache -------------------------------------------------------------------------
def _statcache() -> Check:
    """``.splice/statcache.json`` is only a hint: whatever it holds, ``load`` returns a cache
    (ignored as a whole when malformed), and what it kept writes back to the same records."""
    from splice_build.install.statcache import StatCache, _decode, _encode, _parse

    root = _scratch() / "statcache"
    root.mkdir()
    path = root / "statcache.json"

    def check(data: bytes) -> None:
        path.write_bytes(data)
        cache = StatCache.load(path)
        if cache.changed:
            return
        kept = (cache.records, cache.directories, cache.state)
        parsed = _parse(_encode(*kept), written_ns=2**63)
        again = None if parsed is None else (*_decode(parsed[0], parsed[1], 2**63), parsed[2])
        if again != kept:
            raise Finding(f"what load kept does not read back: {again!r:.200} != {kept!r:.200}")
        for package_id in cache.records:
            cache.unchanged(package_id, root)

    return check


# settings read from environment variables -----------------------------------------------------
def _env_settings() -> Check:
    """First byte: which variable (0-7 as before the last four were added: the seeds and
    cases keep theirs); the rest: its value, as ``os.environ`` decodes bytes."""
    from splice_build.errors import SpliceError
    from splice_build.mcp.admission import MAX_CALLS_ENV, default_max_calls
    from splice_build.mcp.transport.http import token_digest
    from splice_build.project.home import SpliceHome
    from splice_build.project.registry_url import resolve_registry
    from splice_build.registry.client.deadline import DEADLINE_ENV, MIN_RATE_ENV, Deadlines
    from splice_build.registry.client.open import resolve_token
    from splice_build.registry.storage import ARTIFACTS_ENV, DATABASE_URL_ENV, StorageConfig
    from splice_build.spec.node_override import override_path
    from splice_build.stopping import GRACE_ENV, mcp_grace

    home = SpliceHome(_scratch() / "home")
    url = "http://127.0.0.1:8787"
    settings: tuple[tuple[Callable[[str], object], set[str]], ...] = (
        (lambda v: Deadlines.from_env({DEADLINE_ENV: v}), {"INVALID_CONFIG"}),
        (lambda v: Deadlines.from_env({MIN_RATE_ENV: v}), {"INVALID_CONFIG"}),
        (lambda v: default_max_calls({MAX_CALLS_ENV: v}), {"USAGE"}),
        (token_digest, {"USAGE"}),
        (
            lambda v: resolve_registry(
                flag=None, env={"SPLICE_REGISTRY": v}, project=None, home=home
            ),
            {"INVALID_CONFIG"},
        ),
        (
            lambda v: resolve_token(url, home=home, env={"SPLICE_TOKEN": v}, flag=url),
            {"INVALID_CONFIG"},
        ),
        (lambda v: StorageConfig.from_env({DATABASE_URL_ENV: v}), {"INVALID_CONFIG"}),
        (lambda v: StorageConfig.from_env({ARTIFACTS_ENV: v}), {"INVALID_CONFIG"}),
        (lambda v: mcp_grace({GRACE_ENV: v}), {"USAGE"}),
        (lambda v: override_path({"SPLICE_NODE": v}), set()),
        (lambda v: SpliceHome.from_env({"SPLICE_HOME": v}), {"INVALID_CONFIG"}),
        (lambda v: SpliceHome.from_env({"HOME": v}), {"INVALID_CONFIG"}),
    )

    def check(data: bytes) -> None:
        if not data:
            return
        parse, codes = settings[data[0] % len(settings)]
        try:
            parse(os.fsdecode(data[1:].replace(b"\x00", b"")))
        except SpliceError as exc:
            _expect_codes(exc, codes)

    return check


# URLs ----------------------------------------------------------------------------------------
def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _guard() -> Callable[[str], Any]:
    """parse + classify with every host allowed; None when the guard refuses."""
    from splice_build.security.net_errors import NetworkDenied
    from splice_build.security.targets import check_target
    from splice_build.security.urls import InvalidUrl, parse_url

    def guard(text: str) -> Any:
        try:
            return check_target(parse_url(text), ["*"])
        except (InvalidUrl, NetworkDenied):
            return None

    return guard


def _url_guard() -> Check:
    from splice_build.security.targets import bare_host
    from splice_build.security.urls import parse_url

    guard = _guard()

    def check(data: bytes) -> None:
        target = guard(_text(data))
        if target is None:
            return
        again = parse_url(target.request_url)
        if bare_host(again.hostname) != target.host or again.port != target.url.port:
            raise Finding(f"request_url {target.request_url!r} does not parse back to its host")

    return check


class _JsonLines:
    """One long-lived helper process answering one JSON line per JSON line."""

    def __init__(self, argv: list[str], name: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT
        )

    def ask(self, request: object) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request).encode("utf-8") + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise Finding(f"the {self.name} exited")
        return json.loads(line)


def _node_lines(script: Path, *args: str) -> _JsonLines:
    from splice_build.runtime.node import find_node

    return _JsonLines([str(find_node().path), str(script), *args], "Node oracle")


def _url_diff() -> Check:
    guard = _guard()
    node = _node_lines(JS / "url_oracle.mjs")

    def check(data: bytes) -> None:
        text = _text(data)
        target = guard(text)
        if target is None:
            return
        seen = node.ask(text)
        url = target.url
        ours = {
            "ok": True,
            "protocol": url.protocol,
            "username": url.username,
            "password": url.password,
            "hostname": url.hostname,
            "port": url.port,
        }
        if seen != ours:
            raise Finding(f"guard accepted {text!r} as {ours}, Node's URL parses {seen}")

    return check


# @splice/files path rules ---------------------------------------------------------------------
_FILES_CODES = ("INVALID_PATH", "PATH_OUTSIDE_SANDBOX", "SENSITIVE_PATH")


def _files_paths() -> Check:
    import posixpath

    policy = ROOT / "splice_build" / "skills" / "files" / "lib" / "policy.mjs"
    node = _node_lines(JS / "files_oracle.mjs", str(policy))

    def check(data: bytes) -> None:
        allow_root = bool(data[:1]) and data[0] % 2 == 1
        path = _text(data[1:])
        answer = node.ask({"path": path, "allowRoot": allow_root})
        if not answer["ok"]:
            if answer["name"] != "Error" or not answer["message"].startswith(
                tuple(code + ": " for code in _FILES_CODES)
            ):
                raise Finding(f"{path!r}: unexpected failure {answer}")
            return
        segments = answer["segments"]
        if not segments and not allow_root:
            raise Finding(f"{path!r} names the workspace itself outside files.list")
        if "\x00" in path or "\\" in path or len(path.encode("utf-16-le")) // 2 > 512:
            raise Finding(f"{path!r} accepted despite the whole-path rules")
        for segment in segments:
            if segment in ("", ".", "..") or "/" in segment:
                raise Finding(f"{path!r} accepted with segment {segment!r}")
        joined = posixpath.normpath(posixpath.join("/workspace", *segments))
        if joined != "/workspace" and not joined.startswith("/workspace/"):
            raise Finding(f"{path!r} leaves the workspace: {joined}")

    return check


# redaction and secret-scan (time per byte) ----------------------------------------------------
# Superlinear regular expressions show on repetition, and the regex engine gives libFuzzer no
# coverage to climb, so each input is also pumped: repeated to 256 and 2,048 characters and
# timed once. A suspicious look (over 5 ms, or over 0.2 ms and 12x the shorter; linear is 8x)
# is taken once more and the lower times kept: the first scan of a new text also pays for the
# lazy automaton states RE2 builds, and the machine is shared. Still suspicious, the input is
# measured again, best of three, at 1,024 and 4,096 characters and, unless that already rules
# a finding out, at 16,384: a finding when the time per byte at 16,384 exceeds the bound, or
# when the time grows more than 8x for each 4x longer text, twice in a row (linear is 4x,
# quadratic 16x), and then once more at 65,536 (_superlinear). What rules it out early: growth
# up to 6x and a time at 4,096 under a 16th of the bound at 16,384 (even quadratic growth from
# there stays under it). Why 5 ms: a time a + b*n^2 that grows under 12x from 256 to 2,048
# characters grows under 30x more to 16,384, so below 5 ms at 2,048 it stays under half the
# bound.
SECONDS_PER_BYTE = 20e-6
PUMPS = (1024, 4096, 16384)
SUSPECT_SECONDS = 0.005
QUICK_PUMPS = (256, 2048)
MAX_GROWTH = 8.0
EARLY_GROWTH = 6.0  # ruled out early: near linear (4x); the former patterns grew 11x and more


def _once(run: Callable[[str], object], text: str) -> float:
    """The CPU time of this thread running ``run`` on ``text``: every timed run works in
    the calling thread, and the wall clock counted the time others took the core (a full
    test run at load 20 timed a quadratic scan's short texts slow enough to hide it)."""
    start = time.thread_time()
    run(text)
    return time.thread_time() - start


def _best_of_three(run: Callable[[str], object], text: str) -> float:
    return min(_once(run, text) for _ in range(3))


def _pumped(text: str, length: int) -> str:
    return (text * (length // len(text) + 1))[:length]


def _suspicious(quick: list[float]) -> bool:
    """The quick look at 256 and 2,048 characters: slow, or growing faster than linear."""
    return quick[1] >= SUSPECT_SECONDS or (quick[1] >= 0.0002 and quick[1] >= 12 * quick[0])


def _series(run: Callable[[str], object], text: str) -> list[float]:
    """Best-of-three times at ``PUMPS``; only the first two when they rule a finding out."""
    times = [_best_of_three(run, _pumped(text, length)) for length in PUMPS[:2]]
    if times[1] <= EARLY_GROWTH * times[0] and times[1] < SECONDS_PER_BYTE * PUMPS[-1] / 16:
        return times
    return [*times, _best_of_three(run, _pumped(text, PUMPS[2]))]


def _breaks_bound(times: list[float]) -> bool:
    if len(times) < len(PUMPS):
        return False
    growth = [later / max(earlier, 1e-9) for earlier, later in itertools.pairwise(times)]
    return times[-1] > SECONDS_PER_BYTE * PUMPS[-1] or (
        times[-1] > 0.016 and min(growth) > MAX_GROWTH
    )


def _superlinear(run: Callable[[str], object], text: str) -> list[float] | None:
    """The times at ``PUMPS`` and 4x the last when they break the bound, else None.

    A quadratic scan keeps growing at 4x the length; what a busy machine does to the larger
    texts (their caches shared with seven other sessions) stops at a size, so a time that
    broke the bound is looked at once more at 65,536 characters and must grow on (or stay
    over the bound per byte)."""
    times = _series(run, text)
    if not _breaks_bound(times):
        return None
    longer = _once(run, _pumped(text, 4 * PUMPS[-1]))
    if longer > SECONDS_PER_BYTE * 4 * PUMPS[-1] or longer > MAX_GROWTH * times[-1]:
        return [*times, longer]
    return None


Measure = Callable[[str], "list[float] | None"]


def _timed(name: str, run: Callable[[str], object], measure: Measure | None = None) -> Check:
    """``run`` must not raise, and its time must grow linearly with the pumped input.

    ``measure`` is the slow measurement (``_superlinear`` over ``run`` unless given)."""
    measure = measure or (lambda text: _superlinear(run, text))

    def check(data: bytes) -> None:
        text = _text(data)
        run(text)
        if not text:
            return
        texts = [_pumped(text, length) for length in QUICK_PUMPS]
        # The short text takes microseconds, so one pause of the machine in its single timing
        # hid a quadratic scan (12x the time at 256 no longer held); best of three costs little.
        quick = [_best_of_three(run, texts[0]), _once(run, texts[1])]
        if not _suspicious(quick):
            return
        quick = [min(seen, _once(run, pumped)) for seen, pumped in zip(quick, texts, strict=True)]
        if not _suspicious(quick):
            return
        times = measure(text)
        if times is not None:
            shown = ", ".join(f"{t * 1e3:.1f} ms" for t in times)
            sizes = (*PUMPS, 4 * PUMPS[-1])
            raise Finding(f"{name}: {shown} for {sizes} characters (pumping {text[:80]!r})")

    return check


def _redact_run() -> Callable[[str], object]:
    from splice_build.security.redact import redact

    values = ("hunter2-secret-value", "sk-live-0123456789abcdef")
    return lambda text: redact(text, values)


def _secret_scan_run() -> Callable[[str], object]:
    from splice_build.security.secret_scan import scan_text

    return lambda text: scan_text(text, "input.txt", [("TOKEN", "abcdef0123456789")])


def _env_file_run() -> Callable[[str], object]:
    """The text as a whole ``.env`` file, and as the middle of one provider variable's value
    (pumping repeats the whole text, so a long run inside one value needs a line around it)."""
    from splice_build.broker.keys import parse_env_file

    return lambda text: (parse_env_file(text), parse_env_file(f"EXA_API_KEY=x{text}x\n"))


def _js_number_run() -> Callable[[str], object]:
    """``Number(text)`` (registry ``?limit=``, ``splice run key=value``) on the text, and on the
    text followed by a character no number ends with (a failed match is where a pattern
    backtracks, and pumping repeats the whole text)."""
    from splice_build.spec.js_number import js_number

    return lambda text: (js_number(text), js_number(text + "!"))


TIMED_RUNS = {
    "redact": _redact_run,
    "secret_scan": _secret_scan_run,
    "semver": _semver_run,
    "env_file": _env_file_run,
    "js_number": _js_number_run,
}
# The slow measurement runs in a helper process of its own: under atheris the code is
# instrumented, and its coverage tracing made a linear scan look superlinear (secret_scan:
# 1.0 / 8.3 / 65 / 481 ms at 1,024 to 65,536 characters against 0.7 / 1.6 / 16 / 66 ms
# uninstrumented). The helper times the same functions, uninstrumented.
_MEASURE_HELPER = """
import json, sys
from fuzz.targets import TIMED_RUNS, _superlinear
run = TIMED_RUNS[sys.argv[1]]()
for line in sys.stdin:
    print(json.dumps(_superlinear(run, json.loads(line))), flush=True)
"""


def _timed_target(name: str) -> Check:
    import sys

    helper = _JsonLines([sys.executable, "-c", _MEASURE_HELPER, name], "timing helper")
    return _timed(name.replace("_", "-"), TIMED_RUNS[name](), helper.ask)


def _redact() -> Check:
    return _timed_target("redact")


def _secret_scan() -> Check:
    return _timed_target("secret_scan")


def _env_file() -> Check:
    return _timed_target("env_file")


def _result_json() -> Check:
    from fuzz.encoder_targets import result_json

    return result_json()


def _json_text() -> Check:
    from fuzz.encoder_targets import json_text_both

    return json_text_both()


def _number_text() -> Check:
    from fuzz.encoder_targets import number_text

    return number_text()


def _registry_search() -> Check:
    from fuzz.encoder_targets import registry_search

    return registry_search()


def _cli_argv() -> Check:
    from fuzz.cli_targets import cli_argv

    return cli_argv()


def _mcp_wire() -> Check:
    from fuzz.wire_targets import mcp_wire

    return mcp_wire()


def _mcp_cancel() -> Check:
    from fuzz.cli_targets import mcp_cancel

    return mcp_cancel()


def _js_number() -> Check:
    return _timed_target("js_number")


def _grant_records() -> Check:
    from fuzz.record_targets import grant_records

    return grant_records()


def _posix_acl() -> Check:
    from fuzz.record_targets import posix_acl

    return posix_acl()


def _graph_records() -> Check:
    from fuzz.record_targets import graph_records

    return graph_records()


def _consent_record() -> Check:
    from fuzz.record_targets import consent_record

    return consent_record()


def _git_index() -> Check:
    from fuzz.record_targets import git_index

    return git_index()


def _walk_records() -> Check:
    from fuzz.record_targets import walk_records

    return walk_records()


def _outside_links() -> Check:
    from fuzz.record_targets import outside_links

    return outside_links()


def _install_journal() -> Check:
    from fuzz.state_targets import install_journal

    return install_journal()


def _member_locks() -> Check:
    from fuzz.state_targets import member_locks

    return member_locks()


def _workspace_memo() -> Check:
    from fuzz.state_targets import workspace_memo

    return workspace_memo()


def _workspace_edit() -> Check:
    from fuzz.state_targets import workspace_edit

    return workspace_edit()


def _home_files() -> Check:
    from fuzz.state_targets import home_files

    return home_files()


def _provider_answers() -> Check:
    from fuzz.provider_targets import provider_answers

    return provider_answers()


def _tool_input() -> Check:
    from fuzz.input_targets import tool_input

    return tool_input()


def _registry_info() -> Check:
    from fuzz.registry_targets import registry_info

    return registry_info()


def _costly_reads() -> Check:
    from fuzz.registry_targets import costly_reads

    return costly_reads()


def _fs_walk() -> Check:
    from fuzz.sandbox_targets import fs_walk

    return fs_walk("in-process")


def _fs_walk_os() -> Check:
    from fuzz.sandbox_targets import fs_walk

    return fs_walk("os")


def _tar_diff() -> Check:
    from fuzz.tar_targets import tar_diff

    return tar_diff()


def _net_walk() -> Check:
    from fuzz.net_targets import net_walk

    return net_walk("in-process")


def _net_walk_os() -> Check:
    from fuzz.net_targets import net_walk

    return net_walk("os")


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("archive", _archive, "read_archive (tar.gz, legacy bundle) then validation", 65536),
        Target(
            "tar_diff",
            _tar_diff,
            "the package tar reader against tarfile and GNU tar: what it accepts, they read alike",
            65536,
            short_runs=300,
        ),
        Target("manifest", _manifest, "Manifest.from_json: parser and validator"),
        Target("splice_json", _splice_json, "load_project_file on splice.json"),
        Target("splice_lock", _splice_lock, "load_lockfile on splice.lock"),
        Target("pyproject", _pyproject, "read_config on pyproject.toml [tool.splice]"),
        Target("frames", _frames, "parse_child_message: the parent's decoder of sandbox frames"),
        Target("mcp_stdio", _mcp_stdio, "serve_stdio: line reader, JSON-RPC decoding, dispatch"),
        Target("mcp_http", _mcp_http, "the /mcp ASGI app: headers, body, dispatch"),
        Target(
            "mcp_wire",
            _mcp_wire,
            "splice mcp --http on a socket: HTTP framing, connection protocol, the app",
            dictionary="http.dict",
            short_runs=60,
        ),
        Target(
            "registry_http",
            _registry_http,
            "the registry ASGI app: paths, queries, headers, bodies",
        ),
        Target(
            "url_guard",
            _url_guard,
            "parse_url + check_target (the network guard)",
            dictionary="url.dict",
        ),
        Target(
            "url_diff",
            _url_diff,
            "the guard against Node's WHATWG URL: disagreement must be refused",
            dictionary="url.dict",
        ),
        Target(
            "files_paths",
            _files_paths,
            "@splice/files checkPath in one long-lived Node",
            dictionary="paths.dict",
        ),
        Target(
            "registry_client",
            _registry_client,
            "HttpRegistryClient over a hostile registry's status, headers and body",
            short_runs=300,
        ),
        Target(
            "semver",
            _semver,
            "Version/Range.parse: codes, write-back, precedence_key order, linear time",
            1024,
            short_runs=1000,
        ),
        Target(
            "statcache",
            _statcache,
            "StatCache.load on .splice/statcache.json",
            short_runs=1000,
        ),
        Target(
            "env_settings",
            _env_settings,
            "the settings Splice reads from environment variables",
            1024,
            short_runs=1000,
        ),
        Target(
            "capability_args",
            _capability_args,
            "Broker.call (no provider) on a tool's capability arguments",
            short_runs=500,
        ),
        Target(
            "key_files",
            _key_files,
            "signing key files: a private key in SPLICE_HOME/keys, keys trust's public key",
            short_runs=500,
        ),
        Target("redact", _redact, "redact(): no crash, linear time", 1024, "secrets.dict"),
        Target(
            "secret_scan", _secret_scan, "scan_text(): no crash, linear time", 1024, "secrets.dict"
        ),
        Target(
            "env_file",
            _env_file,
            "parse_env_file (.env, .env.local): no crash, linear time",
            1024,
            short_runs=500,
        ),
        Target(
            "js_number",
            _js_number,
            "js_number (JavaScript's Number(text)): no crash, linear time",
            256,
            short_runs=500,
        ),
        Target(
            "result_json",
            _result_json,
            "json_size and write_json against json.dumps: count, bytes, limit",
            short_runs=300,
        ),
        Target(
            "json_text",
            _json_text,
            "canonical_and_stringified (a publish's manifest texts) against the two apart",
            short_runs=300,
        ),
        Target(
            "number_text",
            _number_text,
            "spec/number_text.py against a regex of ASCII digits and int()",
            256,
            short_runs=300,
        ),
        Target(
            "registry_search",
            _registry_search,
            "SQLite registry search: found exactly by the caseless form of its description",
            1024,
            short_runs=200,
        ),
        Target(
            "cli_argv",
            _cli_argv,
            "cli.main.main on any argv, the commands' work stubbed: coded errors, plain = parser",
            1024,
            "cli.dict",
            short_runs=60,
        ),
        Target(
            "mcp_cancel",
            _mcp_cancel,
            "notifications/cancelled: only the calls of its scope and JSON id end",
            short_runs=300,
        ),
        Target(
            "grant_records",
            _grant_records,
            "write-grants.json (a checkout's, SPLICE_HOME's): discovery's drop, then remember",
            short_runs=300,
        ),
        Target(
            "posix_acl",
            _posix_acl,
            "a POSIX ACL's xattr: parse against the kernel's rules, writers under the mask",
            1024,
            short_runs=500,
        ),
        Target(
            "graph_records",
            _graph_records,
            "a doit task record of .splice/graph.sqlite3: status and save, never skipped",
            1024,
            short_runs=300,
        ),
        Target(
            "consent_record",
            _consent_record,
            "SPLICE_HOME's consent record: read grants what it names, written back reads back",
            short_runs=300,
        ),
        Target(
            "git_index",
            _git_index,
            "gitlinks (a write grant's submodules) against git ls-files on the same index",
            short_runs=100,
        ),
        Target(
            "walk_records",
            _walk_records,
            "read_record (.splice/walks.json): no record hides a .git made since it was taken",
            dictionary="walks.dict",
            short_runs=300,
        ),
        Target(
            "outside_links",
            _outside_links,
            "unaccepted_links on a tree of links against a walk of lstat and readlink",
            1024,
            short_runs=300,
        ),
        Target(
            "install_journal",
            _install_journal,
            "a checkout's .splice/tmp/journal.json: recovery touches only its own places",
            dictionary="state.dict",
            short_runs=100,
        ),
        Target(
            "member_locks",
            _member_locks,
            "a member's splice.lock as discovery reads it: fast path = whole parse, drops",
            dictionary="state.dict",
            short_runs=300,
        ),
        Target(
            "workspace_memo",
            _workspace_memo,
            "a checkout's .splice/workspace.json: a shipped memo never picks the members",
            dictionary="state.dict",
            short_runs=100,
        ),
        Target(
            "workspace_edit",
            _workspace_edit,
            "splice workspace add/remove editing a checkout's pyproject.toml in place",
            short_runs=100,
        ),
        Target(
            "home_files",
            _home_files,
            "SPLICE_HOME config.json and credentials.json: read, used, written back",
            short_runs=300,
        ),
        Target(
            "provider_answers",
            _provider_answers,
            "a data provider's API answer: every capability's reader, through a real Broker",
            short_runs=100,
        ),
        Target(
            "tool_input",
            _tool_input,
            "a tool's input (MCP arguments, run --input, key=value): as sent, schema-checked",
            short_runs=300,
        ),
        Target(
            "registry_info",
            _registry_info,
            "registry_package_info's package and version arguments: coded errors or an answer",
            1024,
            short_runs=300,
        ),
        Target(
            "costly_reads",
            _costly_reads,
            "count_costly_read/settle_costly_read: a window holds what its reads took",
            1024,
            short_runs=300,
        ),
        Target(
            "fs_walk",
            _fs_walk,
            "a tool calling every fs function with every argument shape, in-process",
            1024,
            short_runs=10,
        ),
        Target(
            "fs_walk_os",
            _fs_walk_os,
            "the same tool under the OS layer (namespaces, file view, seccomp)",
            1024,
            short_runs=10,
        ),
        Target(
            "net_walk",
            _net_walk,
            "a tool's every route to the network, in-process: recording listeners reached only as granted",
            512,
            short_runs=4,
        ),
        Target(
            "net_walk_os",
            _net_walk_os,
            "net_walk under the OS layer (where this machine has it)",
            512,
            short_runs=4,
        ),
    )
}
