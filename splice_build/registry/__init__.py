"""The registry: metadata store (``db``), artifact store (``blobs``), rules (``service``),
HTTP app and server (``http``), clients (``client``), the data directory layout (``storage``)
and the official skills published into the embedded store (``official``).

Never imports ``runtime``: the registry stores and serves packages, it never runs them.
"""
