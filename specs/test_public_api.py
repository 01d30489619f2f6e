"""The public surface: what ``recurgent`` and ``recurgent.testing`` export."""

from __future__ import annotations

import types

import recurgent
import recurgent.testing


def _public_names(module: types.ModuleType) -> set[str]:
    # dir(), not vars(): the package's names load on first use (ADR 0114), and its __dir__
    # lists them loaded or not. Submodules and the `annotations` feature bound by
    # `from __future__` are not exports.
    return {
        name
        for name in dir(module)
        if not name.startswith("_")
        and not isinstance(getattr(module, name), types.ModuleType)
        and type(getattr(module, name)).__module__ != "__future__"
    }


class TestPackageExports:
    """recurgent.__all__ is the whole surface, sorted and short."""

    def test_all_is_sorted(self) -> None:
        """__all__ is in sorted order."""
        assert recurgent.__all__ == sorted(recurgent.__all__)

    def test_all_matches_the_public_names(self) -> None:
        """Every public name of the package is in __all__, and every entry exists."""
        assert _public_names(recurgent) | {"__version__"} == set(recurgent.__all__)
        assert all(hasattr(recurgent, name) for name in recurgent.__all__)

    def test_all_fits_on_one_screen(self) -> None:
        """The package exports at most 32 names (one screen of an editor)."""
        assert len(recurgent.__all__) <= 32

    def test_core_imports(self) -> None:
        """from recurgent import Agent, Outcome works and names the real classes."""
        from recurgent import Agent, Outcome

        assert (Agent.__module__, Outcome.__module__) == ("recurgent._agent", "recurgent.outcome")

    def test_configure_workers_is_the_worker_pools(self) -> None:
        """recurgent.configure_workers is the one that sets the worker pool's timeout and cap."""
        from recurgent import configure_workers
        from recurgent._worker import _pool

        assert configure_workers is _pool.configure_workers

    def test_version_is_a_string(self) -> None:
        """__version__ is a non-empty string."""
        assert isinstance(recurgent.__version__, str)
        assert recurgent.__version__


class TestTestingExports:
    """recurgent.testing exports the doubles and the log reader."""

    def test_doubles_import(self) -> None:
        """from recurgent.testing import FunctionProvider, ScriptedProvider works."""
        from recurgent.testing import FunctionProvider, ScriptedProvider

        assert (FunctionProvider.__name__, ScriptedProvider.__name__) == (
            "FunctionProvider",
            "ScriptedProvider",
        )

    def test_all_is_sorted_and_complete(self) -> None:
        """recurgent.testing.__all__ is sorted and lists its public classes and functions."""
        exported = recurgent.testing.__all__

        assert exported == sorted(exported)
        assert exported == ["FunctionProvider", "ScriptedProvider", "read_log"]
