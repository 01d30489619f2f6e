"""Role profiles: what sibling methods of a role agree on, and whether each call keeps it
(ADRs 0083, 0084).

* :mod:`._model`: a profile's shape and its check (``normalize_profile``);
* :mod:`._registry`: ``role_profiles.json``, versions, activation, rollback, history
  (``RoleProfileRegistry``, the API applied proposals use);
* :mod:`._binding`: one agent's active profile and its observation cache;
* :mod:`._observe`: the state keys, signature and return shape a program shows;
* :mod:`._guard`: the continuity report of one call;
* :mod:`._namespace`: the state-key telemetry of a role and its namespace pressure.

The lifecycle sequences them (:mod:`recurgent._lifecycle._role_continuity`); nothing here logs or
decides a retry.
"""

from __future__ import annotations

from recurgent._profiles._binding import ProfileBinding
from recurgent._profiles._guard import continuity_report, empty_report
from recurgent._profiles._model import (
    KINDS,
    MODES,
    SCOPES,
    constraint_applies,
    expected_value,
    normalize_profile,
    normalize_version,
)
from recurgent._profiles._namespace import (
    COUNTED_FIGURES,
    forget_namespace,
    load_namespace,
    namespace_path,
    pressure,
    pressure_counts,
    record_namespace,
    seen_values,
)
from recurgent._profiles._observe import ProgramShape, observe_program, return_shape
from recurgent._profiles._registry import (
    RoleProfileRegistry,
    RoleProfiles,
    changes,
    current_actor,
    role_profiles_path,
)

__all__ = [
    "COUNTED_FIGURES",
    "KINDS",
    "MODES",
    "SCOPES",
    "ProfileBinding",
    "ProgramShape",
    "RoleProfileRegistry",
    "RoleProfiles",
    "changes",
    "constraint_applies",
    "continuity_report",
    "current_actor",
    "empty_report",
    "expected_value",
    "forget_namespace",
    "load_namespace",
    "namespace_path",
    "normalize_profile",
    "normalize_version",
    "observe_program",
    "pressure",
    "pressure_counts",
    "record_namespace",
    "return_shape",
    "role_profiles_path",
    "seen_values",
]
