"""SERVED_APIS is what ApiVersions lists: every handler module appears in it under its own
API_KEY, and a module is imported only by the first request for its API."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import asyncbroker.handlers as handlers
from asyncbroker.handlers import SERVED_APIS, HandlerRegistry
import wire.api_versions as api_versions
from wire.messages import ApiKey, kio_version_range


def test_every_handler_module_is_served_under_its_own_api_key() -> None:
    modules = {info.name for info in pkgutil.iter_modules(handlers.__path__)}
    assert modules == {name for name, _, _ in SERVED_APIS.values()}
    for api_key, (name, lo, hi) in SERVED_APIS.items():
        module = importlib.import_module(f"asyncbroker.handlers.{name}")
        assert module.API_KEY == api_key, name
        assert 0 <= lo <= hi, name


def test_every_served_version_can_be_decoded_and_answered() -> None:
    """What ApiVersions offers lies within the versions kio has request and response schemas
    for (the hand-written codecs are held to kio's for those same versions), or, for ApiVersions
    v5, which kio lacks, those its hand-written codec reads and writes: a client is never offered
    a version the broker cannot read or answer."""
    for api_key, (name, lo, hi) in SERVED_APIS.items():
        if api_key == ApiKey.API_VERSIONS:
            assert range(lo, hi + 1) == api_versions.VERSIONS
            continue
        kio_range = kio_version_range(int(api_key))
        assert kio_range is not None, name
        assert kio_range[0] <= lo <= hi <= kio_range[1], (name, (lo, hi), kio_range)


def test_the_registry_lists_the_served_ranges_and_resolves_the_coroutine() -> None:
    registry = HandlerRegistry.discover()
    versions = registry.supported_versions()
    assert versions == {int(k): (lo, hi) for k, (_, lo, hi) in sorted(SERVED_APIS.items())}
    assert versions[ApiKey.PRODUCE] == (3, 12)
    spec = registry.get(ApiKey.METADATA)
    assert spec is not None and spec.name == "metadata"
    from asyncbroker.handlers import metadata

    assert spec.handle is metadata.handle
    assert registry.get(9999) is None


def test_discovery_imports_no_handler_module() -> None:
    # In a fresh interpreter: this test process has imported them all already.
    code = (
        "import sys; sys.modules['hypothesis'] = None\n"
        "from asyncbroker.handlers import HandlerRegistry\n"
        "registry = HandlerRegistry.discover()\n"
        "assert registry.supported_versions()\n"
        "print(sorted(m for m in sys.modules if m.startswith('asyncbroker.handlers.')))\n"
        "registry.get(18)\n"
        "print(sorted(m for m in sys.modules if m.startswith('asyncbroker.handlers.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    before, after = out.stdout.splitlines()
    assert before == "[]"
    assert after == "['asyncbroker.handlers.api_versions']"
