"""JavaScript's ``String.prototype.trim()`` and ``toWellFormed()``, alone: ``spec.names``
needs the first on paths (a no-op ``splice sync``) that must not import the schema validator."""

from __future__ import annotations

# ECMA-262 WhiteSpace and LineTerminator code points: what String.prototype.trim() removes.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    """``text.trim()`` as JavaScript does it (Python's ``strip()`` uses another whitespace set)."""
    return text.strip(_JS_WHITESPACE)


def well_formed(text: str) -> str:
    """``text.toWellFormed()``: each lone surrogate as U+FFFD, which is what Node's UTF-8
    encoder writes for one. A manifest's strings may hold them (``JSON.parse`` keeps
    ``"\\ud800"``), and a database column, which takes UTF-8, cannot."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
