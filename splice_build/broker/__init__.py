"""The capability broker: host capabilities (web, market, on-chain, GitHub, AI) for skills.

::

    from splice_build.broker import default_broker
    from splice_build.runtime import SpliceRuntime

    broker = default_broker(project_root=root, env=os.environ, home=home)
    runtime = SpliceRuntime(project_root=root, broker=broker)

Skills never see keys: ``ctx.capability(name, args)`` reaches ``Broker.call`` in the host
process, which validates the arguments, calls the providers with the host's keys through
the guarded HTTP session, and answers with a LIVE / CACHED / UNAVAILABLE / ERROR result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice_build.broker.broker import Broker, default_broker

__all__ = ["Broker", "default_broker"]


def __getattr__(name: str) -> Any:
    # Importing the package stays free: the broker and its providers load on first use.
    if name in __all__:
        from splice_build.broker import broker

        return getattr(broker, name)
    raise AttributeError(name)
