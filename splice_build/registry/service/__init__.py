"""The registry service: every rule of the registry API, independent of HTTP.

Split by concern: ``auth`` (tokens, principals, admin token), ``tokens`` (token management),
``ratelimit``, ``namespaces`` (ownership, reservation, maintainers), ``publish``, ``read``
(search and metadata), ``admin``; ``registry_service.RegistryService`` is the one facade the
HTTP app and the embedded client call.
"""
