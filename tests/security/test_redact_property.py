"""Property: a secret of each known format, of any length, embedded in random text, never
survives redaction, nor does any 8-character slice of its secret part (docs/security.md#redaction).

A secret is *embedded* when a separator (whitespace or punctuation that no format takes as a
token character) stands on each side of it; the text around it is arbitrary. Variable-length
formats are drawn up to 600 characters, far beyond the old 255-character bound.
"""

from __future__ import annotations

import string
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from splice_build.security.redact import redact

ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"
LONG = 600


def run(alphabet: str, low: int, high: int = LONG) -> st.SearchStrategy[str]:
    """Text of ``alphabet`` whose length is drawn uniformly (long runs are as likely as short)."""
    return st.integers(low, high).flatmap(
        lambda size: st.text(alphabet=alphabet, min_size=size, max_size=size)
    )


def secret(
    prefix: st.SearchStrategy[str], body: st.SearchStrategy[str]
) -> st.SearchStrategy[tuple[str, str]]:
    """``(whole text of the secret, its secret part)``."""
    return st.tuples(prefix, body).map(lambda pair: (pair[0] + pair[1], pair[1]))


def pem() -> st.SearchStrategy[tuple[str, str]]:
    label = st.sampled_from(["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED "])
    body = st.lists(run(ALNUM + "+/=", 8, 64), min_size=1, max_size=12).map("\n".join)
    end = st.booleans()

    def build(parts: tuple[str, str, bool]) -> tuple[str, str]:
        kind, lines, closed = parts
        text = f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}"
        if closed:
            text += f"\n-----END {kind}PRIVATE KEY-----"
        return text, lines

    return st.tuples(label, body, end).map(build)


def jwt() -> st.SearchStrategy[tuple[str, str]]:
    parts = st.tuples(run(URLSAFE, 5), run(URLSAFE, 5), run(URLSAFE, 0))
    return parts.map(lambda p: (f"eyJ{p[0]}.{p[1]}.{p[2]}", f"{p[0]}.{p[1]}.{p[2]}"))


NAME = st.tuples(
    st.text(alphabet=string.ascii_uppercase + "_", max_size=8),
    st.sampled_from(["SECRET", "TOKEN", "PASSWORD", "PASSWD", "API_KEY", "PRIVATE_KEY"]),
    st.text(alphabet=string.ascii_uppercase + string.digits + "_", max_size=8),
).map("".join)
SPACING = st.sampled_from(["", " ", "  "])
# Any printable value without whitespace or quotes (so '&', ';', '@', '#' ... included).
BARE_VALUE = run("".join(c for c in string.printable if c not in string.whitespace + "\"'"), 1)
QUOTED_VALUE = run("".join(c for c in string.printable if c not in '"\\\r\n\x0b\x0c'), 1)


def assignment() -> st.SearchStrategy[tuple[str, str]]:
    bare = st.tuples(NAME, SPACING, BARE_VALUE).map(lambda p: (f"{p[0]}{p[1]}={p[1]}{p[2]}", p[2]))
    quoted = st.tuples(NAME, SPACING, QUOTED_VALUE, st.sampled_from(['"', "'"])).filter(
        lambda p: p[3] not in p[2]
    )
    return bare | quoted.map(lambda p: (f"{p[0]}{p[1]}={p[1]}{p[3]}{p[2]}{p[3]}", p[2]))


FORMATS: dict[str, st.SearchStrategy[tuple[str, str]]] = {
    "pem": pem(),
    "splice": secret(st.just("splice_"), run(URLSAFE, 43, 43)),
    "github": secret(st.sampled_from(["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]), run(ALNUM, 20)),
    "github_pat": secret(st.just("github_pat_"), run(ALNUM + "_", 20)),
    "openai_anthropic": secret(st.sampled_from(["sk-", "sk-ant-", "sk-proj-"]), run(URLSAFE, 16)),
    "slack": secret(st.sampled_from([f"xox{c}-" for c in "abposr"]), run(ALNUM + "-", 10)),
    "aws": secret(
        st.sampled_from(["AKIA", "ASIA"]), run(string.ascii_uppercase + "0123456789", 16, 16)
    ),
    "google": secret(st.just("AIza"), run(URLSAFE, 35)),
    "jwt": jwt(),
    "authorization": secret(
        st.sampled_from(["Authorization: ", "proxy-authorization=", "authorization: Bearer "]),
        run(ALNUM + "._~+/=-!@#$%^&*()", 1),
    ),
    "bearer": secret(st.sampled_from(["Bearer ", "Basic "]), run(ALNUM + "._~+/=-", 6)),
    "cookie": secret(st.sampled_from(["Cookie: ", "set-cookie: "]), run(ALNUM + "=;._-", 1)),
    "url_credentials": st.tuples(run(ALNUM, 1, 20), run(ALNUM + "!$%*+,;=.~-", 1)).map(
        lambda p: (f"https://{p[0]}:{p[1]}@example.com/x", p[1])
    ),
    "query": secret(
        st.sampled_from(["?token=", "&access_token=", "?api_key=", "&password=", "?sig="]),
        run(ALNUM + "%._-~+/", 1),
    ),
    "assignment": assignment(),
}

# Separators: characters no format reads as part of a token or value.
SEPARATOR = st.sampled_from([" ", "\n", "\t", " | ", "\n\n", " ; "])
AROUND = st.text(max_size=200)


def check(around: tuple[str, str], separators: tuple[str, str], found: tuple[str, str]) -> None:
    whole, part = found
    before = around[0] + separators[0]
    after = separators[1] + around[1]
    out = redact(before + whole + after)
    assert whole not in out
    head, _, tail = whole.rpartition(part)  # the secret is the match's last such run
    shown = f"{head}\0{tail}"  # what is kept of the match: its name, its prefix
    for start in range(len(part) - 7):
        piece = part[start : start + 8]
        if piece in before or piece in after or piece in shown:
            continue  # the surrounding text, or the name it is assigned to, has it too
        assert piece not in out, (piece, out)


def _test(name: str) -> Callable[..., None]:  # one test per format, so a failure names it
    @settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
    @given(st.tuples(AROUND, AROUND), st.tuples(SEPARATOR, SEPARATOR), FORMATS[name])
    def test(around: tuple[str, str], separators: tuple[str, str], found: tuple[str, str]) -> None:
        check(around, separators, found)

    test.__name__ = f"test_{name}_never_survives"
    return test


for _name in FORMATS:
    globals()[f"test_{_name}_never_survives"] = _test(_name)
