"""HTTP clients for the provider SDKs that stop reading a reply body past a byte cap.

Both SDKs read a whole reply into memory before parsing it. The client built here wraps every
reply's byte stream so that reading stops, with :class:`ReplyTooLarge`, once more than
``max_bytes`` have arrived; a provider finds that marker with :func:`reply_too_large` (the SDK
may wrap it in its connection error) and raises a typed
:class:`~recurgent.errors.ProviderReplyTooLargeError`. The cap counts bytes as sent, before any
content decoding (ADR 0034).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "ReplyTooLarge", "capped_client", "reply_too_large"]

# The SDKs' own pool limits (their DefaultHttpxClient passes these to the transport it builds).
_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)

#: 8 MiB. A program is capped far lower (the runtime refuses large programs), but its JSON
#: escaping can grow it several times and a reply carries usage and metadata too.
DEFAULT_MAX_REPLY_BYTES = 8 * 1024 * 1024


class ReplyTooLarge(Exception):
    """A reply body grew past the cap while it was being read.

    Attributes:
        limit: The cap in bytes.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(f"reply body exceeded {limit} bytes")
        self.limit = limit


class _CappedStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    def __iter__(self) -> Iterator[bytes]:
        seen = 0
        for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ReplyTooLarge(self._limit)
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _cap_hook(limit: int) -> Callable[[httpx2.Response], None]:
    def hook(response: httpx2.Response) -> None:
        declared = response.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            # Refused before a single body byte is read.
            raise ReplyTooLarge(limit)
        stream = response.stream
        if isinstance(stream, httpx2.SyncByteStream):
            response.stream = _CappedStream(stream, limit)

    return hook


def _close_quietly(transport: httpx2.HTTPTransport) -> None:
    try:
        transport.close()
    except Exception:  # noqa: BLE001 - at interpreter exit anything may be torn down already
        pass


def capped_client(base: type[httpx2.Client], max_bytes: int) -> httpx2.Client:
    """Build an SDK HTTP client whose replies are read up to ``max_bytes`` only.

    Args:
        base: The SDK's ``DefaultHttpxClient`` class (keeps the SDK's timeouts and redirects).
        max_bytes: Largest reply body accepted.
    """
    hooks: dict[str, list[Any]] = {"response": [_cap_hook(max_bytes)]}
    transport = httpx2.HTTPTransport(limits=_LIMITS)
    client = base(event_hooks=hooks, transport=transport)
    # The SDKs close clients they built themselves; ours would keep pooled sockets open until
    # exit. A weakref callback runs before any finalizer when the client dies, even in a
    # reference cycle (an exception's traceback), so the pool is closed before its sockets
    # are finalized, and it never keeps the client alive.
    weakref.finalize(client, _close_quietly, transport)
    return client


def reply_too_large(error: BaseException) -> ReplyTooLarge | None:
    """The :class:`ReplyTooLarge` that caused ``error`` (directly or through its causes)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ReplyTooLarge):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
