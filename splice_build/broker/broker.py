"""``Broker``: the host side of ``ctx.capability(name, args)`` (docs/compatibility.md#capabilities, docs/security.md).

For one request (``{package, tool, capability, args}``, already checked by the runtime for
declaration, budget, concurrency and size):

1. the arguments are checked against the capability's strict schema (``capabilities.py``);
   a problem answers ``ERROR``/``INVALID_INPUT`` and no provider is contacted;
2. a fresh cached answer is replayed as ``CACHED`` (AI answers are never cached);
3. the providers serving the capability are tried in registration order, skipping those
   whose key is not configured (none configured → ``UNAVAILABLE``); the first answer is
   ``LIVE``, and when all fail the result is ``ERROR`` with one attempt per provider.

Nothing leaves ``call`` unredacted: every provider message is passed through ``redact``
with the exact configured key values (and the long pieces of key-carrying URLs). ``call``
never raises for a provider failure, so the runtime's generic ``BROKER_ERROR`` (which knows
no provider keys) is reserved for bugs.

Test-only: ``_unsafe_endpoints`` maps a provider host to a local base URL (fake servers on
127.0.0.1). It is a keyword argument of this constructor and nothing else: no environment
variable, config file or package can set it, and ``default_broker`` never passes it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from splice_build import cancel
from splice_build.broker import envelope
from splice_build.broker.cache import ResultCache, cache_key
from splice_build.broker.capabilities import argument_problems, provider_arguments
from splice_build.broker.envelope import Attempt
from splice_build.broker.interface import BrokerRequest
from splice_build.broker.keys import ProviderKeys, load_keys
from splice_build.broker.providers.http import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_TIMEOUT_SECONDS,
    ProviderClient,
)
from splice_build.broker.providers.interface import (
    Provider,
    ProviderContext,
    ProviderData,
    ProviderFailure,
)
from splice_build.broker.targets import endpoint_problem
from splice_build.errors import ErrorCode
from splice_build.runtime.limits import MAX_CAPABILITY_RESULT_BYTES
from splice_build.runtime.result_json import WRITTEN_WHOLE, json_size, write_json
from splice_build.security.redact import REDACTED, exact_forms, redact, scrub_json
from splice_build.spec.js_date import iso_string

log = logging.getLogger(__name__)

KeysSource = ProviderKeys | Callable[[], ProviderKeys]


class Broker:
    """Serves capability calls with the host's provider keys; satisfies ``CapabilityBroker``."""

    def __init__(
        self,
        *,
        keys: KeysSource,
        providers: Mapping[str, Provider] | None = None,
        cache: ResultCache | None = None,
        clock: Callable[[], float] | None = None,
        request_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        _unsafe_endpoints: Mapping[str, str] | None = None,
    ) -> None:
        if providers is None:
            from splice_build.broker.providers import PROVIDERS

            providers = PROVIDERS
        self._providers = dict(providers)
        self._keys_source = keys
        self._keys: ProviderKeys | None = keys if isinstance(keys, ProviderKeys) else None
        self._protected = False
        self._clock = clock or time.time
        self._cache = cache if cache is not None else ResultCache(clock=self._clock)
        self._timeout = request_timeout
        self._max_bytes = max_response_bytes
        self._endpoints = dict(_unsafe_endpoints or {})
        self._lock = threading.Lock()
        self._degraded: set[str] = set()

    # keys ----------------------------------------------------------------------------------
    @property
    def keys(self) -> ProviderKeys:
        """Loaded on first use, so runs that never call a capability read no file."""
        with self._lock:
            if self._keys is None:
                source = self._keys_source
                self._keys = source() if callable(source) else source
                self._protected = False
            if not self._protected:
                from splice_build.broker.log_redaction import protect

                protect(self._keys.secret_values())
                self._protected = True
            return self._keys

    def redact(self, text: str) -> str:
        return redact(text, self.keys.secret_values())

    def scrub(self, value: Any) -> Any:
        """``value`` (a JSON result) without the key values in any string or object key.

        ``scrub_json`` looks for the keys in the value's JSON text, which it writes whole as
        one ``str``: a large result is looked through as the bytes ``write_json`` writes
        (the same escaping), and one over what a tool may receive (the runtime refuses it;
        the broker's other callers still get it scrubbed) is walked string by string."""
        forms = exact_forms(self.keys.secret_values())
        if not forms:
            return value
        try:
            size = json_size(value, MAX_CAPABILITY_RESULT_BYTES)
            text = (
                write_json(value, size)
                if WRITTEN_WHOLE < size <= MAX_CAPABILITY_RESULT_BYTES
                else None
            )
        except (ValueError, TypeError):  # no strict JSON form: the runtime answers ERROR
            return scrub_json(value, forms)
        if size <= WRITTEN_WHOLE:
            return scrub_json(value, forms)
        if text is not None and not any(f.encode("utf-8", "surrogatepass") in text for f in forms):
            return value
        return _scrub_walk(value, forms)

    def _configured(self, provider: Provider) -> bool:
        return not provider.key_required or (
            provider.key_variable is not None and self.keys.get(provider.key_variable) is not None
        )

    # the call ------------------------------------------------------------------------------
    def call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The result of one capability call, scrubbed of every key value: a provider that
        echoes its key (a request URL in an error object, a debug field) must not hand it to
        the calling tool, which is a package's code (docs/security.md)."""
        return self.scrub(self._call(request))

    def _call(self, request: Mapping[str, Any]) -> dict[str, Any]:
        req = BrokerRequest.from_json(request)
        capability, args = req.capability, req.args
        now = self._clock()
        problems = argument_problems(capability, args)
        if problems:
            return envelope.error(
                capability,
                args,
                ErrorCode.INVALID_INPUT,
                f"Invalid arguments for capability {capability}",
                now=now,
                details=[self.redact(p) for p in problems],
            )
        args = provider_arguments(capability, args)
        key = cache_key(capability, args)
        hit = self._cache.get(key)
        if hit is not None:
            return envelope.cached(*hit)
        serving = [p for p in self._providers.values() if capability in p.capabilities]
        if args.get("provider"):  # ai.*: the caller may name the provider, never a fallback
            serving = [p for p in serving if p.name == args["provider"]]
        if not serving:
            return envelope.unavailable(
                capability, args, f"No provider for {capability} in this build", now=now
            )
        ready = [p for p in serving if self._configured(p)]
        if not ready:
            variables = sorted({str(p.key_variable) for p in serving})
            return envelope.unavailable(
                capability,
                args,
                f"No provider is configured for {capability}: set {' or '.join(variables)} "
                "(see docs/data-providers.md)",
                now=now,
                providers=[p.name for p in serving],
            )
        return self._try(ready, capability, args, key)

    def _try(
        self, providers: list[Provider], capability: str, args: Mapping[str, Any], key: str
    ) -> dict[str, Any]:
        attempts: list[Attempt] = []
        contexts: list[ProviderContext] = []
        # A call made under a cancellation (splice mcp --data: splice_build/cancel.py) that is
        # cancelled has its requests in flight aborted, and no further provider is tried.
        token = cancel.current()
        stop_watching = token.on_cancel(lambda: _abort(list(contexts)))
        try:
            return self._try_each(providers, capability, args, key, attempts, contexts, token)
        finally:  # every answer has become the result (or an attempt) by now
            stop_watching()
            _release(contexts)

    def _try_each(
        self,
        providers: list[Provider],
        capability: str,
        args: Mapping[str, Any],
        key: str,
        attempts: list[Attempt],
        contexts: list[ProviderContext],
        token: cancel.Cancellation,
    ) -> dict[str, Any]:
        for provider in providers:
            try:
                context = self._context(provider)
                contexts.append(context)
                if token.cancelled:  # before this call's clients were there to abort
                    return _cancelled(capability, args, self._clock())
                answer = provider.call(capability, args, context)
            except ProviderFailure as exc:
                # A failed provider's answers are dropped: their bytes are no longer held
                # while the next provider answers (three web providers' 5 MiB each).
                _release(contexts)
                if token.cancelled:  # aborted: no other provider is tried
                    return _cancelled(capability, args, self._clock())
                attempt = Attempt(provider.name, self.redact(exc.message), exc.status)
                log.warning(
                    "provider %s failed for %s: %s", provider.name, capability, attempt.error
                )
                if exc.degraded:
                    with self._lock:
                        self._degraded.add(provider.name)
                if exc.code in (ErrorCode.INVALID_INPUT, ErrorCode.CAPABILITY_LIMIT):
                    return envelope.error(
                        capability,
                        args,
                        exc.code,
                        attempt.error,
                        now=self._clock(),
                        attempts=[attempt],
                    )
                attempts.append(attempt)
                last_code = exc.code
                continue
            except Exception as exc:  # a provider bug must not reach the runtime unredacted
                _release(contexts)
                if token.cancelled:
                    return _cancelled(capability, args, self._clock())
                log.error(
                    "provider %s crashed on %s (%s)", provider.name, capability, type(exc).__name__
                )
                attempts.append(Attempt(provider.name, f"internal error ({type(exc).__name__})"))
                last_code = ErrorCode.PROVIDER_ERROR
                continue
            result = self._live(provider, capability, args, answer, attempts)
            self._cache.put(key, capability, result)
            return result
        if len(attempts) == 1:
            code, message = last_code, attempts[0].error
        else:
            code = ErrorCode.ALL_PROVIDERS_FAILED
            message = f"All providers failed for {capability}: " + "; ".join(
                f"{a.provider}: {a.error}" for a in attempts
            )
        return envelope.error(capability, args, code, message, now=self._clock(), attempts=attempts)

    def _live(
        self,
        provider: Provider,
        capability: str,
        args: Mapping[str, Any],
        answer: ProviderData,
        failed: list[Attempt],
    ) -> dict[str, Any]:
        provenance: dict[str, Any] = {
            "source": provider.name,
            "resource": answer.resource,
            "fetchedAt": iso_string(self._clock()),
            "fresh": True,
        }
        if answer.block_number is not None:
            provenance["blockNumber"] = answer.block_number
        if answer.request_id:
            provenance["requestId"] = self.redact(answer.request_id)
        if failed:
            provenance["fallbackFrom"] = [
                {"provider": a.provider, "error": a.error} for a in failed
            ]
        if answer.rate_limit:
            provenance["rateLimit"] = dict(answer.rate_limit)
        if answer.notes:
            provenance["notes"] = list(answer.notes)
        return envelope.live(capability, args, answer.data, provenance)

    # clients -------------------------------------------------------------------------------
    def _context(self, provider: Provider) -> ProviderContext:
        """One client per host the provider may reach; keys only for its key hosts."""
        key = self.keys.get(provider.key_variable) if provider.key_variable else None
        if provider.hosts:
            bases = {host: (f"https://{host}", "") for host in provider.hosts}
            label = ""
        elif provider.key_is_endpoint and key is not None:
            # The key is a URL (JSON-RPC): its host is the only one allowed, and only when
            # it is public (targets.endpoint_problem): a checkout's .env may name it.
            target, problem = endpoint_problem(key)
            if target is None:
                raise ProviderFailure(
                    f"{provider.key_variable} {problem}: it must be an https URL of a public host"
                )
            bases = {target.host: (target.url.href, target.url.path)}
            label = "{" + str(provider.key_variable) + "}"
        else:  # no network at all (the in-memory provider)
            return ProviderContext({})
        clients = {}
        for host, (base, suffix) in bases.items():
            if host in self._endpoints:  # test-only local fake (see the module docstring)
                base = self._endpoints[host].rstrip("/") + suffix
            clients[host] = ProviderClient(
                provider=provider.name,
                base=base,
                key=key if host in provider.key_hosts else None,
                timeout=self._timeout,
                max_bytes=self._max_bytes,
                label=label,
            )
        return ProviderContext(clients)

    # status --------------------------------------------------------------------------------
    def status(self) -> list[dict[str, Any]]:
        """Each provider: configured or not, degraded or not, where its key came from (no values)."""
        out = []
        for provider in self._providers.values():
            variable = provider.key_variable
            source = self.keys.sources.get(variable) if variable else None
            if provider.name in self._degraded:
                state = "degraded"
            elif self._configured(provider):
                state = "ready"
            else:
                state = "not configured"
            out.append(
                {
                    "provider": provider.name,
                    "title": provider.title,
                    "state": state,
                    "keyVariable": variable,
                    "keySource": source,
                    "capabilities": sorted(provider.capabilities),
                }
            )
        return out


def _release(contexts: list[ProviderContext]) -> None:
    """Give back the answer budget every client of ``contexts`` holds (again: nothing)."""
    for context in contexts:
        for client in context.clients.values():
            client.release()


def _abort(contexts: list[ProviderContext]) -> None:
    """End every request of these contexts' clients now (from the cancelling thread)."""
    for context in contexts:
        for client in context.clients.values():
            client.abort()


def _cancelled(capability: str, args: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The result of a cancelled call: nobody reads it (its caller dropped the call), and
    it is never cached."""
    return envelope.error(
        capability, args, ErrorCode.INTERRUPTED, "The call was cancelled", now=now
    )


def default_broker(
    *, project_root: Path | None, env: Mapping[str, str], home: Path | None
) -> Broker:
    """The broker the SDK, CLI and MCP use: real providers, keys loaded on first call."""
    snapshot = dict(env)
    return Broker(keys=lambda: load_keys(env=snapshot, project_root=project_root, home=home))


def _scrub_walk(value: Any, forms: Sequence[str]) -> Any:
    """``value`` with each of ``forms`` replaced in every string and object key, walked
    without writing it (``Broker.scrub``: a result too large to write for the search)."""
    if isinstance(value, str):
        for form in forms:
            if form in value:
                value = value.replace(form, REDACTED)
        return value
    if isinstance(value, Mapping):
        return {_scrub_walk(k, forms): _scrub_walk(v, forms) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub_walk(item, forms) for item in value]
    return value
