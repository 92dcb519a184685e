"""Package and archive limits (docs/compatibility.md#package-format, docs/compatibility.md#archive-format); one place for every layer."""

from __future__ import annotations

MAX_FILES = 500
MAX_FILE_BYTES = 2 * 1024 * 1024  # per file
# manifest.json is a file of the package, and every level of nesting takes two of its bytes
# ("[" and "]"): no manifest a registry accepts nests deeper. There is no rule of its own
# (docs/compatibility.md#manifest); registry clients refuse deeper answers (registry.client.answers).
MAX_MANIFEST_DEPTH = MAX_FILE_BYTES // 2
MAX_ARCHIVE_BYTES = 5 * 1024 * 1024  # compressed artifact
MAX_EXPANDED_BYTES = 16 * 1024 * 1024  # decompressed tar; inflation stops here
MAX_SKILL_MD_BYTES = 256 * 1024
# A file of project state a checkout ships or Splice writes in a project (splice.json,
# splice.lock, the workspace's pyproject.toml, the files of .splice/): far more than any real
# one holds, and a bound on what a link to a large file elsewhere makes a command read.
MAX_PROJECT_STATE_BYTES = 64 * 1024 * 1024
MAX_INPUT_DEPTH = (
    256  # nesting of a tool's input (docs/compatibility.md#runtime), checked by runtime and MCP
)
