"""URL parsing for the network guard, following the WHATWG URL standard where it decides a host.

The Node guard parses targets with Node's WHATWG ``URL``; the Python guard must reach the same
host for the same text, or a URL could mean one address to a check and another to a
connection. So this module implements the parts of the standard that decide *where* a URL
points: scheme, the special-authority rules (``\\`` as ``/``, any number of slashes, the
last ``@`` ends the userinfo), the port, and the host parser (percent-decoding, UTS #46
mapping — full-width and circled digits, ideographic full stops —, IPv4 in decimal, octal,
hex and short forms, IPv6 with compression and an embedded IPv4 tail).
Paths and queries are carried over without WHATWG re-encoding (they do not decide the
target). ``tests/network/test_url_table.py`` checks verdicts against Node for 100+ forms.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

from splice_build.records import dataclass
from splice_build.spec.number_text import capped_count

SPECIAL_PORTS: dict[str, int | None] = {
    "http": 80,
    "https": 443,
    "ws": 80,
    "wss": 443,
    "ftp": 21,
    "file": None,
}
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*")
_FORBIDDEN_HOST = frozenset("\x00\t\n\r #/:<>?@[\\]^|")
_FORBIDDEN_DOMAIN = _FORBIDDEN_HOST | frozenset("%\x7f") | {chr(c) for c in range(0x20)}
_HEX = frozenset("0123456789abcdefABCDEF")


class InvalidUrl(ValueError):
    """The text is not a valid absolute URL (Node's ``new URL`` throws for it too)."""


@dataclass(frozen=True)
class ParsedUrl:
    """The parts of a URL the guard needs; ``hostname`` is serialized as WHATWG does."""

    protocol: str  # "https:"
    username: str
    password: str
    hostname: str  # "example.com", "127.0.0.1", "[::1]"; "" when there is none
    port: str  # "" for none or the scheme's default
    path: str  # path and query, as given (backslashes turned into slashes)

    @property
    def special(self) -> bool:
        return self.protocol[:-1] in SPECIAL_PORTS

    @property
    def origin(self) -> str:
        if self.protocol not in ("http:", "https:", "ws:", "wss:", "ftp:"):
            return "null"
        return f"{self.protocol}//{self.hostname}{':' + self.port if self.port else ''}"

    @property
    def href(self) -> str:
        auth = ""
        if self.username or self.password:
            auth = self.username + (":" + self.password if self.password else "") + "@"
        return f"{self.protocol}//{auth}{self.hostname}{':' + self.port if self.port else ''}{self.path}"


def _clean(text: str) -> str:
    text = text.strip("".join(chr(c) for c in range(0x21)))
    return text.replace("\t", "").replace("\n", "").replace("\r", "")


def parse_url(text: str) -> ParsedUrl:
    """Parse an absolute URL; raises ``InvalidUrl`` where WHATWG parsing fails."""
    text = _clean(text)
    colon = text.find(":")
    if colon <= 0 or not _SCHEME.fullmatch(text[:colon]):
        raise InvalidUrl(f"Invalid URL: {text}")
    scheme = text[:colon].lower()
    rest = text[colon + 1 :]
    if scheme not in SPECIAL_PORTS:
        return _opaque(scheme, rest)
    if scheme == "file":
        return _file(rest)
    rest = rest.lstrip("/\\")
    end = len(rest)
    for i, ch in enumerate(rest):
        if ch in "/\\?#":
            end = i
            break
    authority, tail = rest[:end], rest[end:]
    username, password, hostport = _split_userinfo(authority)
    host_text, port_text = _split_port(hostport)
    if host_text == "":
        raise InvalidUrl(f"Invalid URL: {text}")
    hostname = parse_host(host_text)
    return ParsedUrl(
        protocol=f"{scheme}:",
        username=username,
        password=password,
        hostname=hostname,
        port=_port(port_text, SPECIAL_PORTS[scheme]),
        path=_path(tail),
    )


def _opaque(scheme: str, rest: str) -> ParsedUrl:
    """A non-special scheme: only the authority's validity matters (the scheme is refused)."""
    hostname = ""
    if rest.startswith("//"):
        authority = re.split(r"[/?#]", rest[2:], maxsplit=1)[0]
        _user, _pw, hostport = _split_userinfo(authority)
        host_text, port_text = _split_port(hostport)
        if host_text.startswith("["):
            hostname = parse_host(host_text)
        elif any(ch in _FORBIDDEN_HOST for ch in host_text):
            raise InvalidUrl(f"Invalid URL: {scheme}:{rest}")
        else:
            hostname = host_text
        _port(port_text, None)
    return ParsedUrl(f"{scheme}:", "", "", hostname, "", "")


def _file(rest: str) -> ParsedUrl:
    hostname = ""
    stripped = rest.replace("\\", "/")
    if stripped.startswith("//"):
        host_text = re.split(r"[/?#]", stripped[2:], maxsplit=1)[0]
        if host_text:
            hostname = parse_host(host_text)
            if hostname == "localhost":
                hostname = ""
    return ParsedUrl("file:", "", "", hostname, "", "")


def _split_userinfo(authority: str) -> tuple[str, str, str]:
    at = authority.rfind("@")
    if at < 0:
        return "", "", authority
    userinfo, hostport = authority[:at], authority[at + 1 :]
    if hostport == "":
        raise InvalidUrl("Invalid URL: credentials without a host")
    user, _, password = userinfo.partition(":")
    return user.replace("@", "%40"), password.replace("@", "%40"), hostport


def _split_port(hostport: str) -> tuple[str, str | None]:
    inside = False
    for i, ch in enumerate(hostport):
        if ch == "[":
            inside = True
        elif ch == "]":
            inside = False
        elif ch == ":" and not inside:
            return hostport[:i], hostport[i + 1 :]
    return hostport, None


def _port(text: str | None, default: int | None) -> str:
    if text is None or text == "":
        return ""
    # Any number of leading zeros, as WHATWG reads a port (a redirect's Location may pad it
    # past the 4,300 digits int() reads), and no digit int() alone would take ("²", "١").
    value = capped_count(text, 65535)
    if value is None or value > 65535:
        raise InvalidUrl(f"Invalid URL: port {text[:40]!r}")
    return "" if value == default else str(value)


def _path(tail: str) -> str:
    tail = tail.split("#", 1)[0]
    path, sep, query = tail.partition("?")
    path = path.replace("\\", "/")
    if not path.startswith("/"):
        path = "/" + path
    return path + sep + query


# The longest name DNS has (RFC 1035: 255 octets on the wire, 253 characters as text).
MAX_DOMAIN_CHARACTERS = 253


def parse_host(text: str) -> str:
    """The WHATWG host parser for special schemes; returns the serialized host."""
    if text.startswith("["):
        if not text.endswith("]"):
            raise InvalidUrl(f"Invalid URL: host {text!r}")
        return f"[{serialize_ipv6(parse_ipv6(text[1:-1]))}]"
    domain = unquote_to_bytes(text).decode("utf-8", "replace")
    ascii_domain = domain_to_ascii(domain)
    if any(ch in _FORBIDDEN_DOMAIN for ch in ascii_domain) or ascii_domain == "":
        raise InvalidUrl(f"Invalid URL: host {text!r}")
    if _ends_in_number(ascii_domain):
        return serialize_ipv4(parse_ipv4(ascii_domain))
    return ascii_domain


def domain_to_ascii(domain: str) -> str:
    """UTS #46 ToASCII with the URL standard's flags (no STD3 rules, non-transitional)."""
    import unicodedata

    import idna

    # Unassigned code points are refused before mapping too: idna's tables may map one that
    # this Python's Unicode data (and Node's) does not know ("\u058b").
    if not domain.isascii() and any(unicodedata.category(c) == "Cn" for c in domain):
        raise InvalidUrl(f"Invalid URL: host {domain!r}")
    try:
        mapped = idna.uts46_remap(domain, std3_rules=False, transitional=False)
    except idna.IDNAError as exc:
        raise InvalidUrl(f"Invalid URL: host {domain!r}") from exc
    _check_bidi(mapped, domain)
    labels = []
    for label in mapped.split("."):
        _check_label(label, domain)
        if label.startswith("xn--"):
            # UTS #46 validity: the decoded label must be non-ASCII, encode back to the same
            # label, and be already mapped (every code point valid, none that maps to another),
            # as Node's URL requires; "xn--nxasmq6bccom" decodes (to a "ϐ", mapped to "β") but
            # Node refuses it.
            try:
                decoded = label[4:].encode("ascii").decode("punycode")
                valid = (
                    not label[4:].startswith("xn--")  # "xn--xn--wss": Node refuses a nested prefix
                    and not decoded.isascii()  # "xn--n--" decodes to "n-": refused by Node too
                    and decoded.encode("punycode") == label[4:].encode("ascii")
                    and idna.uts46_remap(decoded, std3_rules=False, transitional=False) == decoded
                )
            except (UnicodeError, ValueError, idna.IDNAError) as exc:
                raise InvalidUrl(f"Invalid URL: host {domain!r}") from exc
            if not valid:
                raise InvalidUrl(f"Invalid URL: host {domain!r}")
            _check_label(decoded, domain)
            labels.append(label)
        elif label.isascii():
            labels.append(label)
        else:
            encoded = label.encode("punycode").decode("ascii")
            if encoded.startswith("xn--"):
                # "xnᚫ-" encodes to "xn--xn--wss", which this parser (like Node) refuses as
                # text: the host the guard checks must parse again to itself.
                raise InvalidUrl(f"Invalid URL: host {domain!r}")
            labels.append("xn--" + encoded)
    ascii_domain = ".".join(labels)
    if len(ascii_domain.removesuffix(".")) > MAX_DOMAIN_CHARACTERS:
        # No such name resolves, and this parser could not read the request URL built from
        # it again (idna's mapping refuses over 1,024 characters, and the ASCII form of a
        # Unicode name is longer than the name).
        raise InvalidUrl(f"Invalid URL: host longer than {MAX_DOMAIN_CHARACTERS} characters")
    return ascii_domain


def _check_bidi(mapped: str, domain: str) -> None:
    """UTS #46 CheckBidi (on in the URL standard): RFC 5893 on every label of a Bidi domain.

    Applied in full, which refuses a few names Node's ``URL`` accepts (``aא``) and every one it
    refuses (``אa``): where the two disagree, the guard must be the one that refuses. The rule
    reads each code point's Bidi class, so every code point of a Bidi domain must have the class
    Unicode 3.2 already gave it (``_settled``): Node's Bidi table is older than this Python's
    Unicode data and has no class for later letters (``\u087b``, Unicode 14), which makes it
    refuse a label such as ``\u087b\u08c4`` that RFC 5893 allows.
    """
    import unicodedata

    import idna

    labels = [_decoded(label) for label in mapped.split(".")]
    if not any(
        unicodedata.bidirectional(c) in ("R", "AL", "AN") for label in labels for c in label
    ):
        return
    for label in labels:
        if not all(
            _settled(c) and unicodedata.ucd_3_2_0.bidirectional(c) == unicodedata.bidirectional(c)
            for c in label
        ):
            raise InvalidUrl(f"Invalid URL: host {domain!r}")
        try:
            ok = label == "" or idna.core.check_bidi(label, check_ltr=True)
        except idna.IDNAError as exc:
            raise InvalidUrl(f"Invalid URL: host {domain!r}") from exc
        if not ok:
            raise InvalidUrl(f"Invalid URL: host {domain!r}")


def _settled(char: str) -> bool:
    """Whether Unicode 3.2 assigned ``char``: the version IDNA2003 froze, which every UTS #46
    implementation's tables cover, while later additions reach each one's tables at its own
    pace. Context rules (CheckBidi, CheckJoiners) only read the properties of settled code
    points, so the guard and Node cannot read different ones."""
    import unicodedata

    return unicodedata.ucd_3_2_0.category(char) != "Cn"


def _decoded(label: str) -> str:
    """A label as Unicode (``xn--`` decoded; undecodable ones are refused by the caller)."""
    if label.startswith("xn--"):
        try:
            return label[4:].encode("ascii").decode("punycode")
        except (UnicodeError, ValueError):
            return label
    return label


def _check_label(label: str, domain: str) -> None:
    """UTS #46 validity that mapping alone does not give: no leading combining mark, joiners."""
    import unicodedata

    if label and unicodedata.category(label[0]).startswith("M"):
        raise InvalidUrl(f"Invalid URL: host {domain!r}")
    # Code points unassigned in this Python's Unicode data: Node's tables may differ, and
    # where the two could disagree the guard refuses ("xn--nx0smq6b").
    if not label.isascii() and any(unicodedata.category(c) == "Cn" for c in label):
        raise InvalidUrl(f"Invalid URL: host {domain!r}")
    _check_joiners(label, domain)


def _check_joiners(label: str, domain: str) -> None:
    """UTS #46 CheckJoiners (on in the URL standard): ZWNJ/ZWJ only where RFC 5892 allows them.

    A lone U+200D would otherwise become ``xn--1ug``: a host the guard checks but Node's
    ``URL`` refuses. Either joiner may follow a virama (canonical combining class 9, the same
    in Unicode 3.2: Node does not know ``\u1715`` as one); a ZWNJ between joining letters only
    in a label of settled code points (``_settled``), because implementations' joining-type
    tables differ for later letters (Node refuses ``\u0628\u200c\u0767``).
    """
    import unicodedata

    import idna

    for position, char in enumerate(label):
        if char not in "\u200c\u200d":
            continue
        before = label[position - 1] if position else ""
        if before and unicodedata.combining(before) == 9 == unicodedata.ucd_3_2_0.combining(before):
            continue
        allowed = char == "\u200c" and all(_settled(c) for c in label)
        if allowed:
            try:
                allowed = idna.core.valid_contextj(label, position)
            except ValueError:  # a neighbour without a Unicode name (a control character)
                allowed = False
        if not allowed:
            raise InvalidUrl(f"Invalid URL: host {domain!r}")


def _ends_in_number(domain: str) -> bool:
    parts = domain.split(".")
    if parts[-1] == "":
        if len(parts) == 1:
            return False
        parts.pop()
    last = parts[-1]
    if last != "" and last.isascii() and last.isdigit():
        return True
    return _ipv4_number(last) is not None


def _ipv4_number(text: str) -> int | None:
    if text == "":
        return None
    radix = 10
    if len(text) >= 2 and text[:2] in ("0x", "0X"):
        radix, text = 16, text[2:]
    elif len(text) >= 2 and text[0] == "0":
        radix, text = 8, text[1:]
    if text == "":
        return 0
    digits = {10: "0123456789", 8: "01234567", 16: "0123456789abcdefABCDEF"}[radix]
    if any(ch not in digits for ch in text):
        return None
    return int(text, radix)


def parse_ipv4(text: str) -> int:
    """The WHATWG IPv4 parser (decimal, octal, hex, 1 to 4 parts); raises InvalidUrl."""
    parts = text.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        raise InvalidUrl(f"Invalid URL: IPv4 {text!r}")
    numbers = []
    for part in parts:
        number = _ipv4_number(part)
        if number is None:
            raise InvalidUrl(f"Invalid URL: IPv4 {text!r}")
        numbers.append(number)
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise InvalidUrl(f"Invalid URL: IPv4 {text!r}")
    value = numbers[-1]
    for i, n in enumerate(numbers[:-1]):
        value += n * 256 ** (3 - i)
    return value


def serialize_ipv4(value: int) -> str:
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def parse_ipv6(text: str) -> list[int]:
    """The WHATWG IPv6 parser; eight 16-bit pieces or InvalidUrl."""
    bad = InvalidUrl(f"Invalid URL: IPv6 {text!r}")
    pieces = [0] * 8
    index, compress, i, n = 0, None, 0, len(text)
    if text.startswith(":"):
        if not text.startswith("::"):
            raise bad
        i, index, compress = 2, 1, 1
    while i < n:
        if index == 8:
            raise bad
        if text[i] == ":":
            if compress is not None:
                raise bad
            i += 1
            index += 1
            compress = index
            continue
        value = length = 0
        while length < 4 and i < n and text[i] in _HEX:
            value = value * 16 + int(text[i], 16)
            i += 1
            length += 1
        if i < n and text[i] == ".":
            if length == 0 or index > 6:
                raise bad
            pieces[index], pieces[index + 1] = _ipv4_tail(text[i - length :], bad)
            index += 2
            i = n
            break
        if i < n and text[i] == ":":
            i += 1
            if i == n:
                raise bad
        elif i < n:
            raise bad
        pieces[index] = value
        index += 1
    if compress is not None:
        swaps = index - compress
        index = 7
        while index != 0 and swaps > 0:
            j = compress + swaps - 1
            pieces[index], pieces[j] = pieces[j], pieces[index]
            index -= 1
            swaps -= 1
    elif index != 8:
        raise bad
    return pieces


def _ipv4_tail(text: str, bad: InvalidUrl) -> tuple[int, int]:
    parts = text.split(".")
    if len(parts) != 4:
        raise bad
    value = 0
    for part in parts:
        if (
            part == ""
            or not part.isascii()
            or not part.isdigit()
            or (len(part) > 1 and part[0] == "0")
        ):
            raise bad
        number = int(part)
        if number > 255:
            raise bad
        value = value * 256 + number
    return value >> 16, value & 0xFFFF


def serialize_ipv6(pieces: list[int]) -> str:
    """Compressed lowercase form: the first longest run (length > 1) of zeros becomes ``::``."""
    best_start, best_len, start = -1, 1, None
    for k in range(9):
        if k < 8 and pieces[k] == 0:
            if start is None:
                start = k
        elif start is not None:
            if k - start > best_len:
                best_start, best_len = start, k - start
            start = None
    out, k = "", 0
    while k < 8:
        if k == best_start:
            out += "::" if k == 0 else ":"
            k += best_len
            continue
        out += f"{pieces[k]:x}" + (":" if k < 7 else "")
        k += 1
    return out


def resolve_reference(location: str, base: ParsedUrl) -> ParsedUrl:
    """A redirect ``Location`` against the current URL (the WHATWG forms that occur:
    absolute, scheme-relative, absolute path, query, relative path).

    As in WHATWG, the base's own special scheme followed by anything but ``//`` is relative:
    ``http:evil.com`` from ``http://a.com/`` is ``http://a.com/evil.com``. A colon with no
    scheme before it (``:x``) starts a relative path."""
    text = location.strip("".join(chr(c) for c in range(0x21)))
    text = text.replace("\t", "").replace("\n", "").replace("\r", "")
    head = text.split("/", 1)[0].split("\\", 1)[0].split("?", 1)[0].split("#", 1)[0]
    colon = head.find(":")
    if colon > 0 and _SCHEME.fullmatch(head[:colon]):
        if not base.special or f"{head[:colon].lower()}:" != base.protocol:
            return parse_url(text)
        text = text[colon + 1 :]
    authority = f"{base.protocol}//{base.hostname}{':' + base.port if base.port else ''}"
    if text[:2] in ("//", "\\\\", "/\\", "\\/"):
        return parse_url(f"{base.protocol}{text}")
    if text.startswith(("/", "\\")):
        return parse_url(authority + text)
    path, _, _query = base.path.partition("?")
    if text.startswith("?"):
        return parse_url(authority + path + text)
    if text.startswith("#") or text == "":
        return base
    directory = path.rsplit("/", 1)[0]
    return parse_url(f"{authority}{directory}/{text}")
