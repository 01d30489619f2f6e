"""Failure classes: one table classifies the whole error taxonomy, and the lanes obey it."""

from __future__ import annotations

import pytest

from recurgent import errors
from recurgent._lifecycle._lanes import TAXONOMY, failure_class

from .support import scripted

EXPECTED = {
    "provider": ("extrinsic", True),
    "timeout": ("extrinsic", True),
    "invalid_code": ("intrinsic", True),
    "invalid_dependency_manifest": ("intrinsic", False),
    "dependency_manifest_incompatible": ("intrinsic", False),
    "dependency_policy_violation": ("intrinsic", False),
    "execution": ("intrinsic", False),
    "resource_limit": ("intrinsic", False),
    "non_serializable_result": ("intrinsic", False),
    "budget_exceeded": ("intrinsic", False),
    "tool_registry_violation": ("intrinsic", False),
    "guardrail_retry_exhausted": ("adaptive", False),
    "outcome_repair_retry_exhausted": ("adaptive", False),
    "contract_violation": ("adaptive", False),
    "low_utility": ("adaptive", None),
    "wrong_tool_boundary": ("adaptive", None),
    "parse_error": ("adaptive", None),
    "parse_failed": ("adaptive", None),
    "missing_input": ("adaptive", None),
    "invalid_format": ("adaptive", None),
    "schema_mismatch": ("adaptive", None),
    "network_error": ("extrinsic", None),
    "http_error": ("extrinsic", None),
    "rate_limit": ("extrinsic", None),
    "rate_limited": ("extrinsic", None),
    "capability_unavailable": ("extrinsic", None),
    "unsupported_capability": ("intrinsic", None),
    "missing_capability": ("intrinsic", None),
    "environment_preparing": ("extrinsic", True),
    "worker_crash": ("extrinsic", True),
    "dependency_resolution_failed": ("extrinsic", False),
    "dependency_install_failed": ("extrinsic", True),
    "dependency_activation_failed": ("extrinsic", True),
}

# Subclasses whose retriability deliberately differs from their error_type's (ADR 0034): an
# authentication failure is a "provider" error, but retrying it cannot help.
NOT_RETRIABLE_SUBCLASSES = (errors.ProviderAuthError,)


def _runtime_error_classes() -> list[type[errors.RecurgentError]]:
    found: list[type[errors.RecurgentError]] = []
    pending: list[type[errors.RecurgentError]] = [errors.RecurgentError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return [cls for cls in found if cls not in (errors.RecurgentError, errors.UsageError)]


class TestTaxonomyTable:
    """The table in recurgent/_lifecycle/_lanes.py."""

    def test_table_is_exactly_the_documented_taxonomy(self) -> None:
        """Every error_type has the documented class and retriability."""
        assert {k: (v.failure_class, v.retriable) for k, v in TAXONOMY.items()} == EXPECTED

    @pytest.mark.parametrize("cls", _runtime_error_classes(), ids=lambda c: c.__name__)
    def test_runtime_errors_agree_with_the_table(self, cls: type[errors.RecurgentError]) -> None:
        """Each runtime error class's error_type is in the table with the same retriability."""
        expected = TAXONOMY[cls.error_type].retriable and cls not in NOT_RETRIABLE_SUBCLASSES
        assert expected == cls.retriable

    @pytest.mark.parametrize("error_type", sorted(EXPECTED))
    def test_failure_class_reads_the_table(self, error_type: str) -> None:
        """failure_class returns the table's class for every listed type."""
        assert failure_class(error_type) == EXPECTED[error_type][0]

    @pytest.mark.parametrize("error_type", ["fetch_failed", "", None, "TIMEOUT"])
    def test_unknown_types_are_intrinsic(self, error_type: str | None) -> None:
        """Unlisted, empty and differently cased types are intrinsic."""
        assert failure_class(error_type) == "intrinsic"


class TestLanesFollowTheClasses:
    """Retriable outcomes are regenerated unless extrinsic."""

    @pytest.mark.parametrize(
        ("error_type", "calls"),
        [("low_utility", 2), ("unsupported_capability", 2), ("fetch_failed", 2), ("rate_limit", 1)],
    )
    def test_retriable_outcome_regenerates_unless_extrinsic(
        self, error_type: str, calls: int
    ) -> None:
        """Adaptive and intrinsic retriable errors are retried; extrinsic ones are not."""
        program = f"return Outcome.error({error_type!r}, 'failed', True)"
        agent, provider = scripted([program, "return 'ok'"])

        agent.run()

        assert provider.calls == calls
