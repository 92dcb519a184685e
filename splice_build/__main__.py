"""``python -m splice_build``: the ``splice`` command, for an environment whose ``bin`` is not
on ``PATH`` (a client's MCP configuration, a virtual environment not activated)."""

from splice_build.cli.main import entry

if __name__ == "__main__":
    entry()
