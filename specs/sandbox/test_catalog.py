"""The name-level catalog: every public name of every allowed module is classified (ADR 0019)."""

from __future__ import annotations

import importlib
import types
from typing import Any

import pytest

from recurgent._sandbox import ALLOWED_MODULES, SandboxLimits
from recurgent._sandbox._catalog import CATALOG, classify
from recurgent._sandbox._network import make_network_modules
from recurgent._sandbox._reflection import SealedCallable

from .support import error_of, execute, value_of

# Modules the sandbox builds per attempt: their public names are those of the attempt's object.
_PER_ATTEMPT = ("urllib.request", "urllib.error")


def _public_names(module: str) -> set[str]:
    """Public names of ``module`` as generated code could ask for them.

    Submodules that appear as attributes only because something imported them (``xml.dom``
    after any import of it) are left out unless the catalog lists them: the facade refuses a
    name in no row, so they can never be served by accident.
    """
    if module in _PER_ATTEMPT:
        attempt = make_network_modules(
            policy="deny", limits=SandboxLimits(), remaining=lambda: 1.0, spend=lambda _: None
        )
        return {name for name in vars(attempt[module]) if not name.startswith("_")}
    real = importlib.import_module(module)
    names = set()
    for name in dir(real):
        if name.startswith("_"):
            continue
        value = getattr(real, name)
        if (module, name, value) == ("time", "clock", None):
            # freezegun's residue: a freeze sets time.clock and its end restores what it found
            # before (nothing, since 3.8) as None, so the name is there once any spec of this
            # worker froze time.
            continue
        is_submodule = isinstance(value, types.ModuleType) and value.__name__ == f"{module}.{name}"
        if is_submodule and classify(module, name) == "unclassified":
            continue
        names.add(name)
    return names


class TestCatalogIsComplete:
    """A name nobody classified fails loudly instead of being served."""

    @pytest.mark.parametrize("module", ALLOWED_MODULES)
    def test_every_public_name_is_classified(self, module: str) -> None:
        """Each public name of the module is in exactly one row of the catalog."""
        unclassified = sorted(
            name for name in _public_names(module) if classify(module, name) == "unclassified"
        )
        assert unclassified == []

    @pytest.mark.parametrize("module", ALLOWED_MODULES)
    def test_no_row_names_a_name_the_module_lacks(self, module: str) -> None:
        """The catalog lists no stale name (a row for a removed name hides nothing)."""
        rows = CATALOG[module]
        listed = rows.pure | set(rows.replaced) | rows.attempt | rows.denied
        submodules = {name for name in listed if f"{module}.{name}" in CATALOG}
        assert sorted(listed - _public_names(module) - submodules) == []

    def test_the_allowed_modules_are_exactly_the_catalog(self) -> None:
        """``ALLOWED_MODULES`` is derived from the catalog, nothing more."""
        assert tuple(sorted(CATALOG)) == ALLOWED_MODULES

    @pytest.mark.parametrize("module", ALLOWED_MODULES)
    def test_replaced_names_are_sealed_or_classes(self, module: str) -> None:
        """Every static stand-in is a class or a ``SealedCallable``, never a bare function."""
        kinds = {
            name: isinstance(value, type | SealedCallable)
            for name, value in CATALOG[module].replaced.items()
        }
        assert [name for name, ok in kinds.items() if not ok] == []


def _served(module: str, name: str) -> tuple[str, Any]:
    result = execute(f"import {module}\nresult = repr(getattr({module}, {name!r}))[:0]")
    return ("served", None) if result.error is None else ("refused", str(result.error))


class TestFacadeFollowsTheCatalog:
    """The facade serves exactly the served rows."""

    @pytest.mark.parametrize("module", ALLOWED_MODULES)
    def test_denied_names_are_refused(self, module: str) -> None:
        """Every denied name of the module raises the sandbox's refusal."""
        refused = {name: _served(module, name)[0] for name in sorted(CATALOG[module].denied)}
        assert {name for name, kind in refused.items() if kind != "refused"} == set()

    @pytest.mark.parametrize("module", ALLOWED_MODULES)
    def test_served_names_are_served(self, module: str) -> None:
        """Every pure, replaced and attempt name of the module is readable."""
        rows = CATALOG[module]
        names = sorted(rows.pure | set(rows.replaced) | rows.attempt)
        source = f"import {module}\nresult = [n for n in {names!r} if not hasattr({module}, n)]"
        assert value_of(source) == []

    def test_an_unclassified_name_is_never_served(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A name added to a module after the catalog was written is refused."""
        import json

        monkeypatch.setattr(json, "brand_new_helper", len, raising=False)
        assert error_of("import json\nresult = json.brand_new_helper") == (
            "execution",
            "Execution error in tester.run: AttributeError: json.brand_new_helper is not "
            "available in the sandbox",
        )

    def test_a_host_patch_is_seen_by_the_next_attempt(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Pure names are read when the attempt imports them, not cached for the process."""
        import time

        assert value_of("import time\nresult = time.time() > 1000") is True
        monkeypatch.setattr(time, "time", lambda: 42.0)
        assert value_of("import time\nresult = time.time()") == 42.0

    @pytest.mark.parametrize(
        ("module", "name"),
        [
            ("functools", "update_wrapper"),
            ("copy", "dispatch_table"),
            ("numbers", "abstractmethod"),
            ("numbers", "ABCMeta"),
            ("decimal", "DefaultContext"),
            ("csv", "field_size_limit"),
            ("datetime", "sys"),
            ("uuid", "os"),
            ("base64", "main"),
        ],
    )
    def test_side_door_names_are_denied(self, module: str, name: str) -> None:
        """Names that do attribute work, touch process state or re-export modules are denied."""
        assert (classify(module, name), _served(module, name)) == (
            "denied",
            (
                "refused",
                f"Execution error in tester.run: AttributeError: {module}.{name} is not "
                "available in the sandbox",
            ),
        )


class TestRefusalMessages:
    """A refused name says whether the module lacks it or the sandbox withholds it."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            ("import json\nresult = json.nope", "module 'json' has no attribute 'nope'"),
            ("import xml\nresult = xml.dom", "xml.dom is not available in the sandbox"),
            (
                "import xml\nresult = getattr(xml, 'dom.minidom')",
                "module 'xml' has no attribute 'dom.minidom'",
            ),
            ("import json\nresult = json.decoder", "json.decoder is not available in the sandbox"),
        ],
    )
    def test_refusal_message(self, source: str, message: str) -> None:
        """The message names the module and the name, with the reason."""
        assert error_of(source) == (
            "execution",
            f"Execution error in tester.run: AttributeError: {message}",
        )

    def test_a_dotted_name_imports_nothing(self) -> None:
        """Asking a package for a dotted name loads no module into the host."""
        import sys

        before = "xml.sax.saxutils" in sys.modules
        error_of("import xml\nresult = getattr(xml, 'sax.saxutils')")
        assert ("xml.sax.saxutils" in sys.modules) == before
