"""The names an Agent keeps for itself: its public surface, the names tools probe, and so the
names assignment refuses (ADRs 0001, 0031).

:data:`PUBLIC_NAMES` are the Agent's own attributes (``dir(agent)`` lists them with memory's
names); :data:`PROBE_NAMES` raise ``AttributeError`` instead of becoming dynamic methods;
:data:`RESERVED_NAMES`, both together, cannot be assigned, never reach a provider through a
handle and cannot be mapped. ``recurgent._agent`` exports the last two (``from
recurgent._agent import RESERVED_NAMES`` keeps working).
"""

from __future__ import annotations

__all__ = ["PROBE_NAMES", "PUBLIC_NAMES", "RESERVED_NAMES"]

#: The Agent's own public attributes, none of them a dynamic method.
PUBLIC_NAMES = frozenset(
    {
        "for_",
        "prepare",
        "remember",
        "runtime_context",
        "delegate",
        "tool",
        "responds_to",
        "getdoc",
        "propose",
        "proposals",
        "proposal",
        "approve_proposal",
        "reject_proposal",
        "apply_proposal",
        "role_profile",
        "self_model",
        "aio",
        "map",
        "starmap",
    }
)

# Public names that introspection machinery looks up on any object it is shown. Each would
# otherwise be a dynamic method, and the ones a tool *calls* would become provider requests. Names
# starting with "_" (IPython's _repr_*_, _ipython_*_, _ipython_canary_method_should_not_exist_,
# _getAttributeNames, _fields; dunders such as __wrapped__, __signature__, __length_hint__) are
# refused by the underscore rule and need no entry. ``getdoc`` is a real method (ADR 0031).
PROBE_NAMES = frozenset(
    {
        # IPython < 1.0 completion (dir2) called obj.trait_names(); Traits/traitlets detection.
        "trait_names",
        # pytest reads module-level objects' marks while collecting.
        "pytestmark",
        # rich's "does this object claim every attribute?" canary.
        "awehoi1234_wdfjwljet234_234wdfoijsdfmmnxpi492",
    }
)
RESERVED_NAMES = PUBLIC_NAMES | PROBE_NAMES
"""Names ``agent.name = value`` refuses: the Agent's own attributes and the probe names."""
