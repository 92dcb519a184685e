"""Realistic random credentials of every format the secret scan knows
(``security/secret_scan.py``), built at run time so none is ever stored in the repository."""

from __future__ import annotations

import secrets
import string

ALNUM = string.ascii_letters + string.digits


def random_text(n: int, alphabet: str = ALNUM) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def planted() -> dict[str, str]:
    """One realistic random credential per known format, by the format's kind."""
    pem_body = "\n".join(random_text(64, ALNUM + "+/") for _ in range(4))
    head = "-----BEGIN " + "PRIVATE KEY-----"
    return {
        "PEM private key": f"{head}\n{pem_body}\n-----END PRIVATE KEY-----",
        "Splice registry token": "splice_" + random_text(43),
        "GitHub token": "gh" + "p_" + random_text(36),
        "OpenAI/Anthropic-style key": "sk-" + "proj-" + random_text(40),
        "Slack token": "xo" + "xb-" + random_text(12, string.digits) + "-" + random_text(24),
        "AWS access key id": "AK" + "IA" + random_text(16, string.ascii_uppercase + string.digits),
        "Google API key": "AI" + "za" + random_text(35),
        "JSON Web Token": "ey"
        + "J"
        + random_text(20)
        + ".ey"
        + "J"
        + random_text(30)
        + "."
        + random_text(43),
    }
