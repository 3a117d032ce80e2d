"""wire/_kio_compat.py: kio's private schema introspection, checked against every schema
kio has, and the version gate that protects it."""
from __future__ import annotations

import dataclasses

import pytest
from kio.index import load_entity_schema, load_payload_module
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from wire import _kio_compat as compat
from wire.errors import UnsupportedApiError
from wire.messages import ApiKey, request_class, response_class, response_module
from wire.request_bounds import _entity_step


def every_entity() -> list[tuple[int, int, EntityType]]:
    keys = {name: key for key, name in api_key_map.items()}
    return sorted(((keys[name], version, kind) for name, versions in schema_name_map.items() if name in keys
                   for version, kinds in versions.items() for kind in kinds if kind != EntityType.header),
                  key=lambda e: (e[0], e[1], e[2].name))


def test_every_schema_field_is_classified() -> None:
    """Each field of each request and response kio knows, nested entities included, is one of
    the kinds the bounds check walks; a kio release that changes the classification fails here."""
    seen = 0
    kinds = (compat.PrimitiveField, compat.PrimitiveTupleField, compat.EntityField, compat.EntityTupleField)
    for key, version, kind in every_entity():
        module = load_payload_module(key, version, kind)
        for name in dir(module):
            cls = getattr(module, name)
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or name.endswith("Header"):
                continue
            for field in dataclasses.fields(cls):
                assert isinstance(compat.classify_field(field), kinds), (key, version, name, field.name)
                compat.get_field_tag(field)
                seen += 1
    assert seen > 4_000


def test_every_payload_schema_is_where_kio_index_finds_it() -> None:
    """payload_schema goes to kio's module by its layout instead of through kio.index's table:
    both find the same class and module for every request and response kio has, and the
    broker's lookups (wire.messages) name each API as kio does."""
    checked = 0
    for key, version, kind in every_entity():
        name = api_key_map[key]
        kind_name = "request" if kind == EntityType.request else "response"
        expected = load_entity_schema(name, version, kind)
        assert compat.payload_schema(name, version, kind_name) is expected, (name, version, kind_name)
        assert compat.payload_module(name, version, kind_name) is load_payload_module(key, version, kind)
        assert ApiKey(key).name.lower() == name
        looked_up = request_class(key, version) if kind == EntityType.request else response_class(key, version)
        assert looked_up is expected
        if kind == EntityType.response:
            assert response_module(key, version) is load_payload_module(key, version, kind)
        checked += 1
    assert checked > 600  # every request and response of the 300-odd API versions kio 0.6.5 has


def test_a_schema_kio_lacks_is_unsupported() -> None:
    """Versions past kio's last, unknown API names and keys: LookupError from payload_schema,
    UNSUPPORTED_VERSION from the broker's lookups, and nothing else is swallowed."""
    last = max(schema_name_map["metadata"])
    with pytest.raises(LookupError):
        compat.payload_schema("metadata", last + 1, "request")
    with pytest.raises(LookupError):
        compat.payload_schema("no_such_api", 0, "response")
    with pytest.raises(UnsupportedApiError):
        request_class(ApiKey.METADATA, last + 1)
    with pytest.raises(UnsupportedApiError):
        response_class(9_999, 0)
    with pytest.raises(UnsupportedApiError):
        response_module(ApiKey.FETCH, max(schema_name_map["fetch"]) + 1)


def test_the_bounds_walk_is_built_for_every_request_schema() -> None:
    """wire/request_bounds.py builds its walk of each request kio knows from these functions
    (decoding then checks bodies with it; tests/unit/wire/test_wire_messages.py round-trips
    the advertised ones)."""
    built = 0
    for key, version, kind in every_entity():
        if kind != EntityType.request:
            continue
        module = load_payload_module(key, version, kind)
        for name in dir(module):
            cls = getattr(module, name)
            if getattr(cls, "__api_key__", None) == key and getattr(cls, "__type__", None) == EntityType.request:
                assert callable(_entity_step(cls))
                built += 1
    assert built > 250


@pytest.mark.parametrize(("version", "ok"), [("0.6.5", True), ("0.6.9", True), ("0.7", False), ("0.7.0rc1", False),
                                             ("0.6.4", False), ("1.0.0", False)])
def test_the_version_gate(version: str, ok: bool) -> None:
    if ok:
        compat.check_kio_version(version)
    else:
        with pytest.raises(compat.UnsupportedKioVersionError, match="verified with kio >=0.6.5,<0.7.0"):
            compat.check_kio_version(version)
