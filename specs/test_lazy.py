"""Lazy exports (ADR 0114): ``import recurgent`` loads no third-party library and no runtime.

The import-time budget itself is measured by ``bench/import_time.py`` (a ratio taken in one
run); these specs pin its structural cause: which modules a fresh ``import recurgent`` leaves
unloaded, and that reading a name loads exactly its home module.
"""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest

import recurgent
from recurgent._lazy import lazy_exports

# Heavy libraries and runtime rooms that `import recurgent` must not load (ADR 0114).
NOT_LOADED_BY_IMPORT = (
    "RestrictedPython",
    "anthropic",
    "asyncio",
    "filelock",
    "jsonschema",
    "openai",
    "packaging",
    "pydantic",
    "pydantic_core",
    "ray",
    "regex",
    "structlog",
    "tqdm",
    "recurgent._agent",
    "recurgent._lifecycle",
    "recurgent._observability",
    "recurgent._sandbox",
    "recurgent._worker",
    "recurgent.outcome",
    "recurgent.providers",
)


def _fresh_modules(statement: str) -> list[str]:
    """The top-level modules and recurgent modules loaded after ``statement`` in a new process."""
    script = f"import sys\n{statement}\nimport json\nprint(json.dumps(sorted(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    return list(json.loads(done.stdout))


class TestImportLoadsLittle:
    """A fresh ``import recurgent`` loads the errors and the lazy table, nothing heavy."""

    def test_no_heavy_module_is_loaded(self) -> None:
        """None of the pinned libraries or runtime rooms is in sys.modules after the import."""
        loaded = set(_fresh_modules("import recurgent"))

        assert sorted(name for name in NOT_LOADED_BY_IMPORT if name in loaded) == []

    def test_only_these_recurgent_modules_load(self) -> None:
        """Exactly the package, its errors and the lazy-export helper are loaded."""
        loaded = _fresh_modules("import recurgent")

        assert [name for name in loaded if name.split(".")[0] == "recurgent"] == [
            "recurgent",
            "recurgent._lazy",
            "recurgent.errors",
        ]

    def test_catching_an_error_needs_nothing_else(self) -> None:
        """``except recurgent.UsageError`` works without loading the runtime."""
        loaded = set(_fresh_modules("import recurgent\nassert recurgent.UsageError"))

        assert "recurgent._agent" not in loaded
        assert "pydantic" not in loaded

    def test_reading_agent_loads_the_runtime(self) -> None:
        """The laziness is real: reading ``recurgent.Agent`` is what loads ``recurgent._agent``."""
        loaded = set(_fresh_modules("import recurgent\nrecurgent.Agent"))

        assert {"recurgent._agent", "recurgent._lifecycle"} <= loaded


class TestLazyNames:
    """Every exported name is the object its home module defines, and stays so."""

    def test_every_export_is_its_home_modules_object(self) -> None:
        """Each name in __all__ is identical to the same name in the module it comes from."""
        import importlib

        from recurgent import _LAZY_EXPORTS

        for name, home in _LAZY_EXPORTS.items():
            assert getattr(recurgent, name) is getattr(importlib.import_module(home), name), name

    def test_a_read_name_is_kept_in_the_namespace(self) -> None:
        """After one read the value is a plain global of the package (no second lookup)."""
        agent = recurgent.Agent

        assert vars(recurgent)["Agent"] is agent

    def test_unknown_attribute_raises_attribute_error(self) -> None:
        """A name the package does not export is an AttributeError naming it."""
        with pytest.raises(AttributeError) as caught:
            _ = recurgent.Agnet  # type: ignore[attr-defined]

        assert str(caught.value) == "module 'recurgent' has no attribute 'Agnet'"

    def test_star_import_gives_every_export(self) -> None:
        """``from recurgent import *`` binds every name of __all__, lazy ones included."""
        scope: dict[str, object] = {}
        exec("from recurgent import *", scope)

        assert sorted(name for name in scope if name != "__builtins__") == sorted(recurgent.__all__)

    def test_submodules_stay_readable_as_attributes(self) -> None:
        """``recurgent.outcome`` and friends are readable as before, without importing them."""
        loaded = _fresh_modules(
            "import recurgent\nassert recurgent.outcome.Outcome is recurgent.Outcome"
        )

        assert "recurgent.outcome" in loaded


class TestLazyExportsHelper:
    """lazy_exports on a package of its own."""

    def test_loads_on_first_read_and_lists_every_name(self) -> None:
        """A name loads from its module on first read; __dir__ lists it before and after."""
        namespace: dict[str, object] = {"present": 1}
        getattr_, dir_ = lazy_exports(
            "pkg", namespace, {"JSONDecoder": "json"}, submodules=("decoder",)
        )

        assert dir_() == ["JSONDecoder", "present"]
        decoder_class = getattr_("JSONDecoder")

        assert decoder_class is json.JSONDecoder
        assert namespace["JSONDecoder"] is json.JSONDecoder
        assert dir_() == ["JSONDecoder", "present"]

    def test_submodule_of_another_package_name_is_refused(self) -> None:
        """Only listed names load; anything else is an AttributeError naming the package."""
        _getattr, _ = lazy_exports("pkg", {}, {})

        with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'os'"):
            _getattr("os")

    def test_submodule_is_imported_by_name(self) -> None:
        """A listed submodule is imported as ``package.name``."""
        namespace: dict[str, object] = {}
        getattr_, _ = lazy_exports("json", namespace, {}, submodules=("decoder",))

        module = getattr_("decoder")

        assert isinstance(module, types.ModuleType)
        assert module.__name__ == "json.decoder"
