"""MCP server: installed tools to agents over stdio and Streamable HTTP.

``protocol`` is the JSON-RPC dispatch (no transport knowledge), ``interface`` the small
``Backend`` Protocol it talks to, ``memory`` an in-memory backend (real code, for tests and
embedding), ``backend`` the installed-skills backend over the SDK's ``Splice``, ``mapping``
descriptor → MCP tool and result shapes, ``transport/`` the stdio and HTTP plug-ins.
Nothing here imports the registry: MCP serves installed tools only.
"""
