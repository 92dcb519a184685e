"""The registry over HTTP: a Starlette ASGI app (``app``) served by uvicorn (``server``)."""
