"""The verdict table: 170 URL forms through the policy (security.urls + security.targets)
and end to end: a sandboxed tool fetches each one and the parent decides (in a private
network namespace whose ``lo`` carries the table's public addresses, so an allowed request
really arrives and its ``Host`` shows the normalized host). Both must give the expected
verdict: the tool's WHATWG URL and the parent's reading of it cannot disagree on the
target."""

from __future__ import annotations

import json
from typing import Any

import pytest

from splice_build.security.net_errors import NetworkDenied
from splice_build.security.targets import check_target
from splice_build.security.urls import InvalidUrl, parse_url
from testing.netns import run_in_private_netns

ANY = ("*",)
LIT = ("127.0.0.1",)
LIT_ANY = ("127.0.0.1", "*")
EX = ("api.example.com", "*.example.org")
LH = ("localhost",)

NP = "deny:not-public"
ND = "deny:not-declared"
CRED = "deny:credentials"
SCHEME = "deny:scheme"
BAD = "invalid"

# (url, patterns, expected): expected is "allow:<host>[:<grant>]", "deny:<reason>" or "invalid"
TABLE: list[tuple[str, tuple[str, ...], str]] = [
    # IPv4 loopback in every notation the URL parser accepts
    ("http://127.0.0.1/", ANY, NP),
    ("http://127.1/", ANY, NP),
    ("http://127.0.1/", ANY, NP),
    ("http://2130706433/", ANY, NP),
    ("http://0x7f000001/", ANY, NP),
    ("http://0x7f.1/", ANY, NP),
    ("http://0177.0.0.1/", ANY, NP),
    ("http://017700000001/", ANY, NP),
    ("http://0x7f.0x0.0x0.0x1/", ANY, NP),
    ("http://127.000.000.001/", ANY, NP),
    ("http://127.0.0.1./", ANY, NP),
    ("http://0/", ANY, NP),
    ("http://0.0.0.0/", ANY, NP),
    # private, link-local, metadata, special-purpose IPv4
    ("http://10.0.0.1/", ANY, NP),
    ("http://10.255.255.255/", ANY, NP),
    ("http://172.16.0.1/", ANY, NP),
    ("http://172.31.255.255/", ANY, NP),
    ("http://192.168.1.1/", ANY, NP),
    ("http://169.254.169.254/", ANY, NP),
    ("http://169.254.169.254/latest/meta-data/", ANY, NP),
    ("http://0xa9.0xfe.0xa9.0xfe/", ANY, NP),
    ("http://2852039166/", ANY, NP),
    ("http://100.64.0.1/", ANY, NP),
    ("http://100.127.255.255/", ANY, NP),
    ("http://192.0.0.1/", ANY, NP),
    ("http://192.0.2.1/", ANY, NP),
    ("http://192.88.99.1/", ANY, NP),
    ("http://198.18.0.1/", ANY, NP),
    ("http://198.19.255.255/", ANY, NP),
    ("http://198.51.100.1/", ANY, NP),
    ("http://203.0.113.1/", ANY, NP),
    ("http://224.0.0.1/", ANY, NP),
    ("http://239.255.255.250/", ANY, NP),
    ("http://240.0.0.1/", ANY, NP),
    ("http://255.255.255.255/", ANY, NP),
    ("http://0xffffffff/", ANY, NP),
    # public IPv4, including range edges and alternative notations
    ("http://8.8.8.8/", ANY, "allow:8.8.8.8"),
    ("http://1.1.1.1/", ANY, "allow:1.1.1.1"),
    ("http://100.63.255.255/", ANY, "allow:100.63.255.255"),
    ("http://100.128.0.0/", ANY, "allow:100.128.0.0"),
    ("http://172.15.255.255/", ANY, "allow:172.15.255.255"),
    ("http://172.32.0.0/", ANY, "allow:172.32.0.0"),
    ("http://198.17.255.255/", ANY, "allow:198.17.255.255"),
    ("http://0x8.0x8.0x8.0x8/", ANY, "allow:8.8.8.8"),
    ("http://134744072/", ANY, "allow:8.8.8.8"),
    ("http://010.010.010.010/", ANY, "allow:8.8.8.8"),
    ("http://11.0.0.1/", ANY, "allow:11.0.0.1"),
    # IPv4 forms the URL parser rejects
    ("http://256.0.0.1/", ANY, BAD),
    ("http://1.2.3.4.5/", ANY, BAD),
    ("http://0x100000000/", ANY, BAD),
    ("http://4294967296/", ANY, BAD),
    ("http://1.2.3.09/", ANY, BAD),
    ("http://08.0.0.1/", ANY, BAD),
    ("http://1..2.3/", ANY, BAD),
    ("http://999999999999/", ANY, BAD),
    # IPv6 spellings, mapped / compatible / translated / NAT64 / 6to4 / Teredo forms
    ("http://[::1]/", ANY, NP),
    ("http://[0:0:0:0:0:0:0:1]/", ANY, NP),
    ("http://[::]/", ANY, NP),
    ("http://[::ffff:127.0.0.1]/", ANY, NP),
    ("http://[::ffff:7f00:1]/", ANY, NP),
    ("http://[::ffff:8.8.8.8]/", ANY, NP),
    ("http://[::127.0.0.1]/", ANY, NP),
    ("http://[::ffff:0:127.0.0.1]/", ANY, NP),
    ("http://[64:ff9b::7f00:1]/", ANY, NP),
    ("http://[64:ff9b::8.8.8.8]/", ANY, NP),
    ("http://[64:ff9b:1::1]/", ANY, NP),
    ("http://[2002:7f00:1::]/", ANY, NP),
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", ANY, NP),
    ("http://[2001:db8::1]/", ANY, NP),
    ("http://[fc00::1]/", ANY, NP),
    ("http://[fd12:3456:789a::1]/", ANY, NP),
    ("http://[fe80::1]/", ANY, NP),
    ("http://[fec0::1]/", ANY, NP),
    ("http://[ff02::1]/", ANY, NP),
    ("http://[100::1]/", ANY, NP),
    ("http://[3fff::1]/", ANY, NP),
    ("http://[5f00::1]/", ANY, NP),
    ("http://[::FFFF:127.0.0.1]/", ANY, NP),
    ("http://[0::ffff:7f00:0001]/", ANY, NP),
    ("http://[2606:4700:4700::1111]/", ANY, "allow:2606:4700:4700::1111"),
    ("http://[2001:4860:4860::8888]/", ANY, "allow:2001:4860:4860::8888"),
    ("http://[2606:4700:4700:0:0:0:0:1111]/", ANY, "allow:2606:4700:4700::1111"),
    ("http://[::1/", ANY, BAD),
    ("http://[::1]x/", ANY, BAD),
    ("http://[fe80::1%25eth0]/", ANY, BAD),
    ("http://[1:2:3:4::5:6:7:8]/", ANY, BAD),
    ("http://[::ffff:127.0.0.01]/", ANY, BAD),
    ("http://[1::2::3]/", ANY, BAD),
    # localhost names, unicode digits and dots, percent-encoding, embedded whitespace
    ("http://localhost/", ANY, NP),
    ("http://LOCALHOST/", ANY, NP),
    ("http://localhost./", ANY, NP),
    ("http://foo.localhost/", ANY, NP),
    ("http://a.b.localhost./", ANY, NP),
    ("http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/", ANY, NP),
    ("http://localhost:8080/", ANY, NP),
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", ANY, NP),
    ("http://%31%32%37.0.0.1/", ANY, NP),
    ("http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/", ANY, NP),
    ("http://127\u30020\u30020\u30021/", ANY, NP),
    ("http://\u2460\u2461\u2466.0.0.\u2460/", ANY, NP),
    ("http://\uff10\uff58\uff17\uff46.\uff11/", ANY, NP),
    ("http://12\t7.0.0.1/", ANY, NP),
    ("http://127.0.0.1\n/", ANY, NP),
    (" http://127.0.0.1/ ", ANY, NP),
    ("http://example.com/", ANY, "allow:example.com"),
    ("http://EXAMPLE.com./", ANY, "allow:example.com"),
    ("http://xn--mnchen-3ya.de/", ANY, "allow:xn--mnchen-3ya.de"),
    ("http://m\u00fcnchen.de/", ANY, "allow:xn--mnchen-3ya.de"),
    ("http://exa mple.com/", ANY, BAD),
    ("http://example.com:99999/", ANY, BAD),
    ("http://example.com:8x/", ANY, BAD),
    ("http://", ANY, BAD),
    ("http://a b/", ANY, BAD),
    ("http://exa%20mple.com/", ANY, BAD),
    ("http://exa%mple.com/", ANY, BAD),
    ("http://ex<ample.com/", ANY, BAD),
    # userinfo tricks
    ("http://user:pass@example.com/", ANY, CRED),
    ("http://user@example.com/", ANY, CRED),
    ("http://:pass@example.com/", ANY, CRED),
    ("http://:@example.com/", ANY, "allow:example.com"),
    ("http://@example.com/", ANY, "allow:example.com"),
    ("http://example.com@127.0.0.1/", ANY, CRED),
    ("http://127.0.0.1@example.com/", ANY, CRED),
    ("http://a@b@127.0.0.1/", ANY, CRED),
    ("http://user:pass@/", ANY, BAD),
    ("http://example.com\\@127.0.0.1/", ANY, "allow:example.com"),
    ("http://127.0.0.1#@example.com/", ANY, NP),
    ("http://127.0.0.1?@example.com/", ANY, NP),
    ("http://api.example.com@evil.com/", EX, CRED),
    # schemes and scheme spellings
    ("file:///etc/passwd", ANY, SCHEME),
    ("ftp://example.com/", ANY, SCHEME),
    ("ws://example.com/", ANY, SCHEME),
    ("javascript:alert(1)", ANY, SCHEME),
    ("data:text/plain,hi", ANY, SCHEME),
    ("gopher://127.0.0.1:25/", ANY, SCHEME),
    ("HTTPS://EXAMPLE.COM/", ANY, "allow:example.com"),
    ("http:example.com/", ANY, "allow:example.com"),
    ("http:\\\\example.com\\", ANY, "allow:example.com"),
    ("http:///example.com/", ANY, "allow:example.com"),
    ("//example.com/", ANY, BAD),
    ("example.com", ANY, BAD),
    ("HtTp://127.0.0.1/", ANY, NP),
    ("http://example.com:80/", ANY, "allow:example.com"),
    ("https://example.com:443/", ANY, "allow:example.com"),
    # declared patterns: exact, subdomain wildcard (never the apex)
    ("https://api.example.com/", EX, "allow:api.example.com"),
    ("https://API.EXAMPLE.COM./", EX, "allow:api.example.com"),
    ("https://evil.com/", EX, ND),
    ("https://api.example.com.evil.com/", EX, ND),
    ("https://example.org/", EX, ND),
    ("https://a.example.org/", EX, "allow:a.example.org"),
    ("https://a.b.example.org/", EX, "allow:a.b.example.org"),
    ("https://evil-example.org/", EX, ND),
    ("https://xexample.org/", EX, ND),
    # explicit grants: the exact literal, or localhost
    ("http://127.0.0.1:8080/", LIT, "allow:127.0.0.1:literal"),
    ("http://127.1/", LIT, "allow:127.0.0.1:literal"),
    ("http://2130706433/", LIT, "allow:127.0.0.1:literal"),
    ("http://127.0.0.2/", LIT, ND),
    ("http://localhost/", LIT, ND),
    ("http://[::ffff:127.0.0.1]/", LIT, ND),
    ("http://127.0.0.2/", LIT_ANY, NP),
    ("http://127.0.0.1/", LIT_ANY, "allow:127.0.0.1:literal"),
    ("http://[::1]/", LIT_ANY, NP),
    ("http://localhost/", LH, "allow:localhost:localhost"),
    ("http://LOCALHOST./", LH, "allow:localhost:localhost"),
    ("http://foo.localhost/", LH, ND),
    ("http://127.0.0.1/", LH, ND),
    ("http://foo.localhost/", ("*.localhost",), NP),
    ("http://10.0.0.5/", ("10.0.0.5",), "allow:10.0.0.5:literal"),
    ("http://10.0.0.6/", ("10.0.0.5",), ND),
    ("http://example.com/", (), ND),
    ("file:///x", (), SCHEME),
]


def _expected(spec: str) -> dict[str, Any]:
    if spec == BAD:
        return {"verdict": "invalid"}
    kind, _, rest = spec.partition(":")
    if kind == "deny":
        return {"verdict": "deny", "reason": rest}
    host, grant = (
        rest.rsplit(":", 1) if rest.endswith((":literal", ":localhost")) else (rest, "none")
    )
    return {"verdict": "allow", "host": host, "grant": grant}


def _python_verdict(url: str, patterns: tuple[str, ...]) -> dict[str, Any]:
    try:
        parsed = parse_url(url)
    except InvalidUrl:
        return {"verdict": "invalid"}
    try:
        target = check_target(parsed, patterns)
    except NetworkDenied as exc:
        return {"verdict": "deny", "reason": exc.reason}
    return {"verdict": "allow", "host": target.host, "grant": target.grant}


@pytest.fixture(scope="module")
def sandbox_verdicts(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    rows = []
    for url, patterns, expected in TABLE:
        want = _expected(expected)
        rows.append({"url": url, "patterns": list(patterns), "expectHost": want.get("host")})
    table = tmp_path_factory.mktemp("table") / "table.json"
    table.write_text(json.dumps(rows), encoding="utf-8")
    answer = run_in_private_netns("url_table", str(table), timeout=600)
    return answer["verdicts"]


def test_the_table_is_large_enough() -> None:
    assert len(TABLE) >= 100
    assert len({(u, p) for u, p, _ in TABLE}) == len(TABLE)


@pytest.mark.parametrize(
    ("index", "url", "patterns", "expected"), [(i, *row) for i, row in enumerate(TABLE)]
)
def test_the_policy_gives_the_expected_verdict(
    index: int, url: str, patterns: tuple[str, ...], expected: str
) -> None:
    assert _python_verdict(url, patterns) == _expected(expected)


@pytest.mark.node
@pytest.mark.parametrize(
    ("index", "url", "patterns", "expected"), [(i, *row) for i, row in enumerate(TABLE)]
)
def test_a_sandboxed_fetch_gets_the_same_verdict(
    sandbox_verdicts: list[dict[str, Any]],
    index: int,
    url: str,
    patterns: tuple[str, ...],
    expected: str,
) -> None:
    want = _expected(expected)
    got = sandbox_verdicts[index]
    if want["verdict"] != "allow":
        assert got == want, got
        return
    assert got["verdict"] == "allow", got
    if "host" in got:  # the request arrived: its Host is the normalized host
        host = got["host"].rsplit(":", 1)[0] if not got["host"].endswith("]") else got["host"]
        assert host.strip("[]").lower() == want["host"], got
    else:  # https, where nothing listens: allowed, then refused by the namespace's lo
        assert url.lower().lstrip().startswith("https:"), got
