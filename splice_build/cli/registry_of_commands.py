"""Every `splice` command, by module name under ``splice_build.cli.commands``.

Adding a command is adding its module here (pre-commit's explicit language table).
"""

from __future__ import annotations

COMMAND_MODULES: tuple[str, ...] = (
    "init",
    "add",
    "install",
    "remove",
    "list_cmd",
    "outdated",
    "update",
    "verify",
    "pack",
    "validate",
    "run",
    "demo",
    "mcp",
    "search",
    "info",
    "publish",
    "login",
    "logout",
    "whoami",
    "token",
    "namespace",
    "keys",
    "sign",
    "config",
    "registry_cmd",
    "secret_scan",
    "sync",
    "workspace",
    "doctor",
    "help",
)
