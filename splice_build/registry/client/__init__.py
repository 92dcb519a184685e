"""Registry clients behind one protocol: HTTP (``requests``) and embedded (in-process).

``open.open_registry(url, home=...)`` picks the right one for a registry URL.
"""
