"""Replies in Anthropic's Messages wire format, for a :class:`LoopbackServer` at ``/v1/messages``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specs.providers.loopback import Reply

__all__ = ["anthropic_error", "message", "text_block", "tool_use"]


def tool_use(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A ``tool_use`` content block calling execute_code with ``arguments``."""
    return {
        "type": "tool_use",
        "id": "toolu_fake",
        "name": "execute_code",
        "input": dict(arguments),
    }


def text_block(text: str) -> dict[str, Any]:
    """A ``text`` content block."""
    return {"type": "text", "text": text}


def message(
    *blocks: Mapping[str, Any],
    stop_reason: str = "tool_use",
    usage: Mapping[str, int] | None = None,
) -> Reply:
    """A 200 reply holding one assistant message with ``blocks``."""
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [dict(block) for block in blocks],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": dict(
            usage
            or {
                "input_tokens": 120,
                "output_tokens": 30,
                "cache_read_input_tokens": 900,
                "cache_creation_input_tokens": 0,
            }
        ),
    }
    return Reply(200, body)


def anthropic_error(
    status: int, kind: str, text: str, headers: Mapping[str, str] | None = None
) -> Reply:
    """An error reply with Anthropic's ``{"type": "error", "error": {...}}`` body."""
    body = {"type": "error", "error": {"type": kind, "message": text}}
    return Reply(status, body, headers=dict(headers or {}))
