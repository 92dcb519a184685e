"""@splice/http in the real sandbox, against local servers only.

Tools run through an explicit 127.0.0.1 variant of the package (testing/loopback_variants.py:
the copy differs only in ``permissions.network``), because the shipped package — ``network:
["*"]``, any *public* host — must refuse loopback, and a test proves that too. No test
contacts a host outside this machine.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from splice_build.runtime import SpliceRuntime
from splice_build.spec.package import validate_package_files
from splice_build.spec.schema_subset import check_schema, validate_value
from testing.github_fake import FakeGitHub, Reply, serve_replies
from testing.loopback_variants import loopback_variant
from testing.netservers import NetServer, serve
from testing.skill_runner import SkillProject, error_codes, examples, package_files, skill_project

pytestmark = pytest.mark.node

GUARD_LIMIT = 16 * 1024 * 1024  # the guard's body limit (netpolicy.json response.maxBytes)

#: What the local server answers for each example (the example's host is replaced by it).
EXAMPLE_REPLIES: dict[str, Reply] = {
    "/v1/status": Reply(
        200,
        {
            "content-type": "application/json; charset=utf-8",
            "cache-control": "max-age=30",
            "date": "Thu, 01 Jan 2026 00:00:00 GMT",
            "etag": '"status-1767225600"',
            "server": "example",
            "x-request-id": "b7d0c1",
        },
        b'{"status":"ok","version":"1.4.2","uptimeSeconds":86400}',
    ),
    "/robots.txt": Reply(
        200,
        {
            "content-type": "text/plain; charset=utf-8",
            "last-modified": "Wed, 31 Dec 2025 12:00:00 GMT",
            "date": "Thu, 01 Jan 2026 00:00:00 GMT",
            "set-cookie": "session=never-returned",
        },
        b"User-agent: *\nDisallow: /private/\n",
    ),
    "/v1/messages": Reply(
        201,
        {
            "content-type": "application/json",
            "location": "https://api.example.com/v1/messages/17",
            "date": "Thu, 01 Jan 2026 00:00:00 GMT",
        },
        b'{"id":17,"text":"hello"}',
    ),
}

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

#: Responses for body-type and status tests.
REPLIES: dict[str, Reply] = {
    **EXAMPLE_REPLIES,
    "/png": Reply(200, {"content-type": "image/png"}, PNG),
    "/latin1": Reply(
        200, {"content-type": "text/plain; charset=iso-8859-1"}, "café".encode("latin-1")
    ),
    "/untyped-utf8": Reply(200, {}, "plain ü".encode()),
    "/untyped-binary": Reply(200, {}, b"\xff\xfe\x00\x01"),
    "/problem": Reply(200, {"content-type": "application/problem+json"}, b'{"title":"x"}'),
    "/bad-json": Reply(200, {"content-type": "application/json"}, b"{not json"),
    "/html": Reply(200, {"content-type": "text/html"}, b"<p>hi</p>"),
    "/empty": Reply(204, {"etag": '"e1"'}, b""),
    "/gone": Reply(404, {"content-type": "application/json"}, b'{"error":"not found"}'),
    "/unavailable": Reply(503, {"content-type": "text/plain", "retry-after": "120"}, b"later"),
    "/deep": Reply(200, {"content-type": "application/json"}, b"[" * 501 + b"]" * 501),
    "/escapes": Reply(200, {"content-type": "text/plain"}, b"\x01" * 200_000),
    "/cut": Reply(200, {"content-type": "text/plain"}, b"x" * 1000, cut=True),
}


@pytest.fixture(scope="module")
def net() -> Iterator[NetServer]:
    with serve() as server:
        yield server


@pytest.fixture(scope="module")
def replies() -> Iterator[FakeGitHub]:
    with serve_replies(REPLIES) as server:
        yield server


@pytest.fixture(scope="module")
def variant(tmp_path_factory: pytest.TempPathFactory) -> SkillProject:
    tmp = tmp_path_factory.mktemp("http-variant")
    return skill_project("http", tmp, package_dir=loopback_variant("http", tmp / "variant"))


def _ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["ok"], result
    return result["output"]


def _manifest() -> dict[str, Any]:
    return json.loads(package_files("http")["manifest.json"])


def _tool(name: str) -> dict[str, Any]:
    return next(tool for tool in _manifest()["tools"] if tool["name"] == name)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- the package --------------------------------------------------------------------------


def test_package_is_valid_official_skill() -> None:
    manifest = validate_package_files(package_files("http"))
    raw = _manifest()
    assert (manifest.id, manifest.version) == ("@splice/http", "0.1.0")
    assert raw["runtime"] == {"type": "node", "minNodeVersion": "22.18.0"}
    assert raw["permissions"] == {"fs": {"read": [], "write": []}, "network": ["*"], "env": []}
    assert [tool["name"] for tool in raw["tools"]] == ["get", "post"]
    for tool in raw["tools"]:
        assert tool["timeoutMs"] == 20000
        assert tool["input"]["additionalProperties"] is False
        headers = tool["input"]["properties"]["headers"]
        assert headers["additionalProperties"] is False
        assert sorted(headers["properties"]) == [
            "accept",
            "accept-language",
            "if-modified-since",
            "if-none-match",
            "user-agent",
        ]
        assert check_schema(tool["input"]) == [] and check_schema(tool["output"]) == []


def test_variant_differs_only_in_the_network_grant(tmp_path: Path) -> None:
    package = loopback_variant("http", tmp_path / "variant")
    shipped = package_files("http")
    copied = {p.relative_to(package).as_posix(): p.read_bytes() for p in package.rglob("*.*")}
    assert copied.keys() == shipped.keys()
    assert [name for name in shipped if shipped[name] != copied[name]] == ["manifest.json"]
    changed = json.loads(copied["manifest.json"])
    assert changed["permissions"]["network"] == ["127.0.0.1"]
    changed["permissions"]["network"] = ["*"]
    assert changed == _manifest()


def test_examples_match_schemas_and_real_outputs(
    variant: SkillProject, replies: FakeGitHub
) -> None:
    cases = examples("http")
    assert sorted(case["tool"] for case in cases) == ["get", "get", "post"]
    calls = []
    for case in cases:
        tool = _tool(case["tool"])
        assert validate_value(tool["input"], case["input"], "input") == []
        assert validate_value(tool["output"], case["output"], "output") == []
        origin = "/".join(case["input"]["url"].split("/", 3)[:3])
        calls.append(
            (
                case["tool"],
                {**case["input"], "url": case["input"]["url"].replace(origin, replies.base_url)},
            )
        )
    results = variant.run_many_tools(calls)
    for case, result in zip(cases, results, strict=True):
        output = _ok(result)
        origin = "/".join(case["input"]["url"].split("/", 3)[:3])
        assert output["url"] == replies.base_url + case["output"]["url"][len(origin) :]
        assert {**output, "url": case["output"]["url"]} == case["output"]


# --- get and post -----------------------------------------------------------------------------


def test_get_sends_only_the_given_headers(variant: SkillProject, net: NetServer) -> None:
    headers = {
        "accept": "application/json",
        "accept-language": "de-CH",
        "if-none-match": '"abc"',
        "if-modified-since": "Thu, 01 Jan 2026 00:00:00 GMT",
        "user-agent": "agent/1.0",
    }
    plain, custom = variant.run_many(
        "get", [{"url": net.url("/echo?x=1")}, {"url": net.url("/echo"), "headers": headers}]
    )
    first = _ok(plain)
    assert first["status"] == 200 and first["ok"] is True and first["redirected"] is False
    assert first["url"] == net.url("/echo?x=1") and first["bodyType"] == "json"
    assert first["json"]["method"] == "GET" and first["json"]["path"] == "/echo?x=1"
    assert first["json"]["headers"]["user-agent"] == "splice-http/0.1.0"
    assert first["bytes"] == int(first["headers"]["content-length"])
    sent = _ok(custom)["json"]["headers"]
    assert {name: sent[name] for name in headers} == headers
    assert not {"authorization", "cookie"} & set(sent)


def test_post_json_text_and_content_type(variant: SkillProject, net: NetServer) -> None:
    url = net.url("/echo")
    outputs = [
        _ok(r)["json"]
        for r in variant.run_many(
            "post",
            [
                {"url": url, "json": {"b": [1, None], "a": "é"}},
                {"url": url, "text": "line 1\nline 2"},
                {"url": url, "text": "<x/>", "contentType": "application/xml"},
                {"url": url, "json": None},
                {"url": url, "text": ""},
            ],
        )
    ]
    assert [o["method"] for o in outputs] == ["POST"] * 5
    assert json.loads(outputs[0]["body"]) == {"b": [1, None], "a": "é"}
    assert outputs[0]["headers"]["content-type"] == "application/json"
    assert outputs[1]["body"] == "line 1\nline 2"
    assert outputs[1]["headers"]["content-type"] == "text/plain; charset=utf-8"
    assert (outputs[2]["body"], outputs[2]["headers"]["content-type"]) == (
        "<x/>",
        "application/xml",
    )
    assert outputs[3]["body"] == "null" and outputs[4]["body"] == ""


def test_redirects_are_followed_and_reported(variant: SkillProject, net: NetServer) -> None:
    chained, to_get, kept = variant.run_many_tools(
        [
            ("get", {"url": net.url("/chain/5")}),
            ("post", {"url": net.url("/redirect?to=/echo&status=303"), "json": {"a": 1}}),
            ("post", {"url": net.url("/redirect?to=/echo&status=307"), "json": {"a": 1}}),
        ]
    )
    first = _ok(chained)
    assert first["redirected"] is True and first["url"] == net.url("/echo")
    assert (_ok(to_get)["json"]["method"], _ok(to_get)["json"]["body"]) == ("GET", "")
    assert (_ok(kept)["json"]["method"], _ok(kept)["json"]["body"]) == ("POST", '{"a":1}')


def test_body_types_and_statuses(variant: SkillProject, replies: FakeGitHub) -> None:
    calls = [
        {"url": replies.url("/png")},
        {"url": replies.url("/latin1")},
        {"url": replies.url("/untyped-utf8")},
        {"url": replies.url("/untyped-binary")},
        {"url": replies.url("/problem")},
        {"url": replies.url("/bad-json")},
        {"url": replies.url("/html"), "responseType": "json"},
        {"url": replies.url("/problem"), "responseType": "text"},
        {"url": replies.url("/empty"), "responseType": "json"},
        {"url": replies.url("/gone")},
        {"url": replies.url("/unavailable")},
        {"url": replies.url("/v1/status"), "responseType": "json"},
    ]
    results = variant.run_many("get", calls)
    html_as_json = results.pop(6)
    assert error_codes([html_as_json]) == ["INVALID_JSON_RESPONSE"]
    out = [_ok(r) for r in results]
    assert (out[0]["bodyType"], base64.b64decode(out[0]["base64"])) == ("base64", PNG)
    assert out[0]["bytes"] == len(PNG) and "text" not in out[0] and "json" not in out[0]
    assert (out[1]["bodyType"], out[1]["text"], out[1]["bytes"]) == ("text", "café", 4)
    assert (out[2]["bodyType"], out[2]["text"]) == ("text", "plain ü")
    assert (out[3]["bodyType"], out[3]["base64"]) == ("base64", "//4AAQ==")
    assert (out[4]["bodyType"], out[4]["json"]) == ("json", {"title": "x"})
    assert (out[5]["bodyType"], out[5]["text"]) == ("text", "{not json")  # auto falls back
    assert (out[6]["bodyType"], out[6]["text"]) == ("text", '{"title":"x"}')
    empty = out[7]
    assert (empty["status"], empty["bodyType"], empty["bytes"]) == (204, "empty", 0)
    assert empty["headers"] == {"etag": '"e1"', "content-length": "0"}
    gone = out[8]
    assert (gone["status"], gone["statusText"], gone["ok"]) == (404, "Not Found", False)
    assert gone["json"] == {"error": "not found"}
    unavailable = out[9]
    assert (unavailable["status"], unavailable["ok"], unavailable["text"]) == (503, False, "later")
    assert unavailable["headers"]["retry-after"] == "120"
    assert out[10]["json"]["version"] == "1.4.2"
    assert "set-cookie" not in json.dumps(out) and "x-request-id" not in json.dumps(out)


# --- errors -----------------------------------------------------------------------------------


def test_error_codes(variant: SkillProject, net: NetServer, replies: FakeGitHub) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}/x"
    skill_errors: list[tuple[str, str, dict[str, Any]]] = [
        ("INVALID_URL", "get", {"url": "not a url at all"}),
        ("INVALID_URL", "get", {"url": "/relative/path"}),
        ("INVALID_URL", "get", {"url": "ftp://127.0.0.1/file"}),
        ("INVALID_URL", "get", {"url": "file:///etc/passwd"}),
        ("INVALID_URL", "post", {"url": f"http://user:pw@127.0.0.1:{net.port}/echo", "text": "x"}),
        ("INVALID_URL", "get", {"url": f"http://user@127.0.0.1:{net.port}/echo"}),
        ("TIMEOUT", "get", {"url": net.url("/slow?ms=3000"), "timeoutMs": 300}),
        ("TIMEOUT", "post", {"url": net.url("/slow?ms=3000"), "text": "x", "timeoutMs": 300}),
        ("RESPONSE_TOO_LARGE", "get", {"url": net.url("/big?bytes=101"), "maxBytes": 100}),
        ("RESPONSE_TOO_LARGE", "get", {"url": net.url("/big?bytes=262145")}),
        ("RESPONSE_TOO_LARGE", "get", {"url": net.url(f"/gzip-bomb?bytes={GUARD_LIMIT + 1}")}),
        ("RESPONSE_TOO_LARGE", "get", {"url": replies.url("/escapes"), "maxBytes": 524288}),
        ("NETWORK_ERROR", "get", {"url": dead}),
        ("NETWORK_ERROR", "post", {"url": dead, "json": {}}),
        ("NETWORK_ERROR", "get", {"url": net.url("/chain/6")}),
        ("NETWORK_ERROR", "get", {"url": replies.url("/cut")}),
        ("INVALID_JSON_RESPONSE", "get", {"url": replies.url("/bad-json"), "responseType": "json"}),
        ("INVALID_JSON_RESPONSE", "get", {"url": replies.url("/deep"), "responseType": "json"}),
        ("INVALID_INPUT", "post", {"url": net.url("/echo")}),
        ("INVALID_INPUT", "post", {"url": net.url("/echo"), "json": 1, "text": "1"}),
        ("INVALID_INPUT", "post", {"url": net.url("/echo"), "text": "x", "contentType": "  "}),
        (
            "INVALID_INPUT",
            "get",
            {"url": net.url("/echo"), "headers": {"accept": "a\r\nx-injected: 1"}},
        ),
        (
            "INVALID_INPUT",
            "get",
            {"url": net.url("/echo"), "headers": {"user-agent": "bot \u2603"}},
        ),
    ]
    # Refused by the runtime's schema check before the tool runs (no Authorization, no Cookie).
    schema_errors: list[tuple[str, dict[str, Any]]] = [
        ("get", {"url": net.url("/echo"), "headers": {"authorization": "Bearer x"}}),
        ("get", {"url": net.url("/echo"), "headers": {"Authorization": "Bearer x"}}),
        ("get", {"url": net.url("/echo"), "headers": {"cookie": "session=1"}}),
        ("post", {"url": net.url("/echo"), "text": "x", "headers": {"cookie": "a"}}),
        ("get", {"url": net.url("/echo"), "timeoutMs": 99}),
        ("get", {"url": net.url("/echo"), "timeoutMs": 15001}),
        ("get", {"url": net.url("/echo"), "maxBytes": 0}),
        ("get", {"url": net.url("/echo"), "maxBytes": 524289}),
        ("get", {"url": net.url("/echo"), "responseType": "xml"}),
        ("get", {"url": "http://"}),
        ("get", {"url": "http://" + "a" * 2042}),
        ("get", {"url": net.url("/echo"), "method": "DELETE"}),
        ("post", {"url": net.url("/echo"), "text": "x" * 1_000_001}),
        ("post", {"url": net.url("/echo"), "text": "x", "contentType": "t" * 201}),
    ]
    before = len(net.seen)
    calls = [(tool, tool_input) for _, tool, tool_input in skill_errors] + schema_errors
    results = variant.run_many_tools(calls)
    skill_results, schema_results = results[: len(skill_errors)], results[len(skill_errors) :]
    assert error_codes(skill_results) == [code for code, _, _ in skill_errors], [
        (case[2], r.get("error")) for case, r in zip(skill_errors, skill_results, strict=True)
    ]
    assert {r["error"]["code"] for r in skill_results} == {"TOOL_ERROR"}
    assert [r["error"]["code"] for r in schema_results] == ["INVALID_INPUT"] * len(schema_errors)
    details = [r["error"]["details"][0] for r in schema_results]
    assert details[0].startswith("input.headers.authorization: ")
    assert details[2].startswith("input.headers.cookie: ")
    # Refused input never reached a server: no call above ends at /echo.
    assert not [s.path for s in net.seen[before:] if s.path.startswith("/echo")]
    assert "x-injected" not in json.dumps([s.headers for s in net.seen])


def test_limits_admit_their_maximum(variant: SkillProject, net: NetServer) -> None:
    exact, largest = variant.run_many(
        "get",
        [
            {"url": net.url("/big?bytes=100"), "maxBytes": 100},
            {"url": net.url("/big?bytes=524288"), "maxBytes": 524288, "timeoutMs": 15000},
        ],
    )
    assert (_ok(exact)["bytes"], _ok(exact)["text"]) == (100, "x" * 100)
    assert _ok(largest)["bytes"] == 524288


def test_loopback_redirects_from_the_variant_are_rechecked(
    variant: SkillProject, net: NetServer
) -> None:
    """Even the 127.0.0.1 variant may not be redirected to another non-public target."""
    targets = [
        "http://169.254.169.254/latest/meta-data/",
        f"http://localhost:{net.port}/echo",
        f"http://[::1]:{net.port}/echo",
        f"http://127.0.0.2:{net.port}/echo",
        "http://10.0.0.1/",
    ]
    results = variant.run_many(
        "get", [{"url": net.url(f"/redirect?to={t}&status=302")} for t in targets]
    )
    assert error_codes(results) == ["PERMISSION_DENIED"] * len(targets), results
    assert all(r["error"]["message"].startswith("Redirect blocked: ") for r in results)


# --- the shipped package refuses every non-public target ---------------------------------------


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> SkillProject:
    return skill_project("http", tmp_path_factory.mktemp("http-real"))


def test_real_package_refuses_loopback_private_and_metadata(real: SkillProject) -> None:
    with serve() as server:
        port = server.port
        urls = [
            f"http://127.0.0.1:{port}/echo",
            "http://169.254.169.254/",
            "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
            "http://[::1]/",
            f"http://[::1]:{port}/echo",
            "http://2130706433/",
            f"http://2130706433:{port}/echo",
            f"http://0x7f.1:{port}/echo",
            f"http://127.1:{port}/echo",
            f"http://[::ffff:127.0.0.1]:{port}/echo",
            f"http://localhost:{port}/echo",
            f"http://app.localhost:{port}/echo",
            "http://10.0.0.1/",
            "http://192.168.1.1/",
            "http://172.16.0.1/",
            "http://[fd00::1]/",
            "http://0.0.0.0/",
            "https://127.0.0.1/",
        ]
        calls = [("get", {"url": u}) for u in urls] + [
            ("post", {"url": f"http://127.0.0.1:{port}/echo", "json": {"leak": True}}),
            ("post", {"url": "http://169.254.169.254/", "text": "x"}),
        ]
        results = real.run_many_tools(calls)
        assert error_codes(results) == ["PERMISSION_DENIED"] * len(calls), results
        assert server.seen == []


def test_real_package_refuses_names_that_resolve_to_loopback(tmp_path: Path) -> None:
    """A public-looking name whose DNS answer is loopback is refused at the lookup."""
    project = skill_project("http", tmp_path)
    runtime = SpliceRuntime(
        project_root=project.root,
        env={},
        _unsafe_test_resolver={
            "intranet.invalid": [["127.0.0.1"]],
            "mixed.invalid": [["127.0.0.9", "10.1.2.3"]],
        },
    )
    package = runtime.load(project.package_dir)
    with serve() as server:
        results = [
            runtime.execute(package, "get", {"url": f"http://{name}:{server.port}/echo"}).to_json()
            for name in ("intranet.invalid", "mixed.invalid")
        ]
        assert error_codes(results) == ["PERMISSION_DENIED"] * 2, results
        assert "resolves to 127.0.0.1" in results[0]["error"]["message"]
        assert server.seen == []
