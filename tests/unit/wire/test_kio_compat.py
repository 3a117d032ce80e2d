"""wire/_kio_compat.py: kio's private schema introspection, checked against every schema
kio has, and the version gate that protects it."""
from __future__ import annotations

import dataclasses

import pytest
from kio.index import load_payload_module
from kio.schema.index import api_key_map, schema_name_map
from kio.static.constants import EntityType

from wire import _kio_compat as compat
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
