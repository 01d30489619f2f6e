"""HTTP clients for the provider SDKs that stop reading a reply body past a byte cap.

Both SDKs read a whole reply into memory before parsing it. The client built here wraps every
reply's byte stream so that reading stops, with :class:`ReplyTooLarge`, once more than
``max_bytes`` have arrived; a provider finds that marker with :func:`reply_too_large` (the SDK
may wrap it in its connection error) and raises a typed
:class:`~recurgent.errors.ProviderReplyTooLargeError`. The cap counts bytes as sent, before any
content decoding (ADR 0034).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx2

__all__ = ["DEFAULT_MAX_REPLY_BYTES", "ReplyTooLarge", "capped_client", "reply_too_large"]

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


_CLOSING: dict[type[httpx2.Client], type[httpx2.Client]] = {}
_CLOSING_LOCK = threading.Lock()


def _closing(base: type[httpx2.Client]) -> type[httpx2.Client]:
    # The SDKs close the clients they build themselves when those are collected; a client we
    # hand them would otherwise leave its pooled sockets open until the process exits.
    def __del__(self: httpx2.Client) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down anything
            pass

    with _CLOSING_LOCK:
        subclass = _CLOSING.get(base)
        if subclass is None:
            subclass = type(f"Capped{base.__name__}", (base,), {"__del__": __del__})
            _CLOSING[base] = subclass
        return subclass


def capped_client(base: type[httpx2.Client], max_bytes: int) -> httpx2.Client:
    """Build an SDK HTTP client whose replies are read up to ``max_bytes`` only.

    Args:
        base: The SDK's ``DefaultHttpxClient`` class (keeps the SDK's limits and timeouts).
        max_bytes: Largest reply body accepted.
    """
    hooks: dict[str, list[Any]] = {"response": [_cap_hook(max_bytes)]}
    return _closing(base)(event_hooks=hooks)


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
