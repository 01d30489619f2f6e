"""Dependency manifests: normalisation, refusals, monotonic growth and the dependency policy."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._worker._manifest import (
    DependencyPolicy,
    EffectiveManifest,
    ManifestEntry,
    grow_manifest,
    normalize_manifest,
)
from recurgent.errors import (
    DependencyManifestIncompatibleError,
    DependencyPolicyViolationError,
    InvalidDependencyManifestError,
    UsageError,
)
from recurgent.program import Dependency


def test_none_is_an_empty_manifest() -> None:
    """No dependencies normalise to an empty tuple."""
    assert normalize_manifest(None) == ()


def test_names_are_canonical_and_entries_sorted_with_default_version() -> None:
    """Names take their PEP 503 form, a missing version is '>=0', entries sort by name."""
    manifest = normalize_manifest([{"name": "Requests", "version": ">=2"}, {"name": "feedparser"}])
    assert [entry.as_dict() for entry in manifest] == [
        {"name": "feedparser", "version": ">=0"},
        {"name": "requests", "version": ">=2"},
    ]


def test_pep503_equivalent_duplicates_collapse() -> None:
    """Foo_Bar, foo-bar and FOO.bar with one version are one entry."""
    manifest = normalize_manifest(
        [
            {"name": "Foo_Bar", "version": "==1"},
            {"name": "foo-bar", "version": "==1"},
            {"name": "FOO.bar", "version": "==1"},
        ]
    )
    assert manifest == (ManifestEntry("foo-bar", "==1"),)


def test_dotted_names_are_accepted_and_dependency_models_read() -> None:
    """zope.interface is a valid name; Dependency models from Program are accepted."""
    assert normalize_manifest([Dependency(name="zope.interface", version="~=6.0")]) == (
        ManifestEntry("zope-interface", "~=6.0"),
    )


@pytest.mark.parametrize("raw", ["requests", b"x", {"name": "x"}, 3])
def test_a_non_list_is_refused(raw: Any) -> None:
    """Only a list of objects is a manifest."""
    with pytest.raises(InvalidDependencyManifestError, match="dependencies must be a list"):
        normalize_manifest(raw)


def test_a_non_object_entry_is_refused() -> None:
    """Each entry is an object."""
    with pytest.raises(
        InvalidDependencyManifestError, match=r"dependencies\[0\] must be an object"
    ):
        normalize_manifest(["requests"])


@pytest.mark.parametrize(
    "name",
    [
        "requests!",
        "pkg[extra]",
        "git+https://x/y",
        "../local",
        "pkg @ https://evil/x.whl",
        "a b",
        "pkg;python_version<'3'",
        "/abs/path",
    ],
)
def test_extras_urls_paths_and_markers_are_refused_as_names(name: str) -> None:
    """Anything but a plain package name is a supply-chain escape and is refused."""
    with pytest.raises(InvalidDependencyManifestError, match=r"dependencies\[0\]\.name is invalid"):
        normalize_manifest([{"name": name}])


@pytest.mark.parametrize("name", ["", "   ", None, 42])
def test_missing_or_blank_names_are_refused(name: Any) -> None:
    """A name is a non-empty string."""
    with pytest.raises(InvalidDependencyManifestError, match="name must be a non-empty string"):
        normalize_manifest([{"name": name}])


def test_blank_version_is_refused() -> None:
    """A given version is a non-empty string."""
    with pytest.raises(InvalidDependencyManifestError, match="version must be a non-empty string"):
        normalize_manifest([{"name": "x", "version": " "}])


@pytest.mark.parametrize(
    "version", ["~> 1.16", "latest", ">=1; python_version<'3.12'", "@ https://x"]
)
def test_invalid_specifiers_and_markers_in_versions_are_refused(version: str) -> None:
    """Versions are PEP 440 specifier sets; Ruby's '~>' and markers are refused."""
    with pytest.raises(
        InvalidDependencyManifestError, match=r"dependencies\[0\]\.version is invalid"
    ):
        normalize_manifest([{"name": "x", "version": version}])


def test_unknown_keys_are_refused() -> None:
    """Only name and version are read; 'url' or 'extras' are not silently dropped."""
    with pytest.raises(InvalidDependencyManifestError, match="unknown keys \\['url'\\]"):
        normalize_manifest([{"name": "x", "url": "https://evil"}])


def test_conflicting_versions_of_one_package_are_refused() -> None:
    """The same package twice with different versions is a conflict."""
    with pytest.raises(
        InvalidDependencyManifestError,
        match=r"dependencies\[1\] conflicts with prior declaration for package 'nokogiri' \(~=1.16 vs ~=1.17\)",
    ):
        normalize_manifest(
            [{"name": "nokogiri", "version": "~=1.16"}, {"name": "Nokogiri", "version": "~=1.17"}]
        )


def test_manifest_only_grows() -> None:
    """[a] then [a, b] then [] gives [a], [a, b], [a, b]."""
    a, b = ManifestEntry("a", ">=1"), ManifestEntry("b", ">=0")
    first = grow_manifest(None, (a,), role="r")
    second = grow_manifest(first, (a, b), role="r")
    third = grow_manifest(second, (), role="r")
    assert (first, second, third) == ((a,), (a, b), (a, b))
    assert grow_manifest(second, (ManifestEntry("c", ">=0"),), role="r") == (
        a,
        b,
        ManifestEntry("c", ">=0"),
    )


def test_changing_a_present_version_is_incompatible() -> None:
    """A present package must keep its exact specifier; the error is typed and non-retriable."""
    with pytest.raises(DependencyManifestIncompatibleError) as raised:
        grow_manifest(
            (ManifestEntry("nokogiri", "~=1.16"),),
            (ManifestEntry("nokogiri", "~=1.17"),),
            role="parser",
        )
    assert raised.value.error_type == "dependency_manifest_incompatible"
    assert raised.value.retriable is False
    assert raised.value.metadata == {"dependency_name": "nokogiri"}
    assert "dependencies for parser are incompatible" in raised.value.message


def test_effective_manifest_commits_only_when_asked() -> None:
    """A candidate does not change the manifest until committed (commit after success)."""
    manifest = EffectiveManifest()
    candidate = manifest.candidate((ManifestEntry("a", ">=0"),), role="r")
    before = manifest.entries
    assert before == ()
    manifest.commit(candidate)
    assert manifest.entries == (ManifestEntry("a", ">=0"),)


def test_allow_list_refuses_other_packages_with_metadata() -> None:
    """allowed_packages admits only its names; the error names the package and the policy."""
    policy = DependencyPolicy.build(allowed_packages=["HTTPX"])
    policy.check([ManifestEntry("httpx", ">=0")])
    with pytest.raises(DependencyPolicyViolationError) as raised:
        policy.check([ManifestEntry("nokogiri", ">=0")])
    assert (
        raised.value.message == "dependency policy violation for nokogiri: not in allowed_packages"
    )
    assert raised.value.metadata == {"dependency_name": "nokogiri", "policy": "allowed_packages"}
    assert raised.value.retriable is False


def test_block_list_refuses_its_packages() -> None:
    """blocked_packages names are never installed (compared canonically)."""
    policy = DependencyPolicy.build(blocked_packages=["Evil_Pkg"])
    with pytest.raises(
        DependencyPolicyViolationError, match="evil-pkg: blocked by blocked_packages"
    ):
        policy.check([ManifestEntry("evil-pkg", ">=0")])


def test_internal_only_requires_an_internal_source() -> None:
    """internal_only with no index or with PyPI is refused; a local directory is fine."""
    with pytest.raises(
        DependencyPolicyViolationError, match="requires at least one internal package index"
    ):
        DependencyPolicy.build(source_mode="internal_only").check([])
    with pytest.raises(
        DependencyPolicyViolationError, match=r"forbids public source https://pypi\.org/simple"
    ):
        DependencyPolicy.build(
            source_mode="internal_only", index_urls=["https://pypi.org/simple"]
        ).check([])
    DependencyPolicy.build(source_mode="internal_only", index_urls=["/srv/wheels"]).check([])


def test_public_only_refuses_private_sources() -> None:
    """public_only admits PyPI only."""
    with pytest.raises(
        DependencyPolicyViolationError,
        match=r"forbids non-public source https://corp\.example/simple",
    ):
        DependencyPolicy.build(
            source_mode="public_only", index_urls=["https://corp.example/simple"]
        ).check([])


def test_index_flags_follow_sources_and_default_to_pip_configuration() -> None:
    """No sources: no flags (pip.conf rules); a directory: --no-index --find-links; URLs: index flags."""
    assert DependencyPolicy.build().index_flags() == []
    assert DependencyPolicy.build(index_urls=["/w"]).index_flags() == [
        "--no-index",
        "--find-links",
        "/w",
    ]
    assert DependencyPolicy.build(index_urls=["https://a/simple", "https://b/simple"]).index_flags() == [
        "--index-url", "https://a/simple", "--extra-index-url", "https://b/simple",
    ]  # fmt: skip


def test_bad_policy_options_are_usage_errors() -> None:
    """An unknown source mode or a string where a list belongs is a developer mistake."""
    with pytest.raises(UsageError, match="source_mode must be one of"):
        DependencyPolicy.build(source_mode="anything")
    with pytest.raises(UsageError, match="allowed_packages must be a list"):
        DependencyPolicy.build(allowed_packages="requests")
