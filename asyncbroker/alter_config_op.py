"""IncrementalAlterConfigs' operations on a resource's overrides: SET, DELETE, APPEND and
SUBTRACT, as Kafka applies them to topic and group configs alike."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping

from storage.config_def import ConfigKey, ConfigType
from wire.errors import InvalidConfigurationError, InvalidRequestError, UnknownServerError


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs operation types (Kafka's AlterConfigOp.OpType ids)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


def apply_op(keys: Mapping[str, ConfigKey], kind_of_config: str, overrides: Mapping[str, str], key: str, op: int,
             value: str | None, current: Callable[[], str]) -> dict[str, str]:
    """`overrides` after one operation. `keys` are the resource's config keys (`kind_of_config`
    names them in the unknown-key error: "topic", "group"); `current()` is the key's value in
    force, which APPEND and SUBTRACT start from when it has no override."""
    try:
        kind = AlterConfigOp(op)
    except ValueError:
        # Kafka fails on an unknown operation id as on a bug: UNKNOWN_SERVER_ERROR, no text.
        raise UnknownServerError(f"Unknown alter config operation {op} for {key}") from None
    definition = keys.get(key)
    if definition is None:
        if kind is AlterConfigOp.DELETE:
            return dict(overrides)  # Kafka deletes a key it does not know without a word
        raise InvalidConfigurationError(f"Unknown {kind_of_config} config name: {key}")
    if kind is not AlterConfigOp.DELETE and value is None:
        raise InvalidRequestError(f"Null value not supported for : {key}")
    result = dict(overrides)
    if kind is AlterConfigOp.SET:
        result[key] = value  # type: ignore[assignment]
    elif kind is AlterConfigOp.DELETE:
        result.pop(key, None)
    else:
        if definition.type is not ConfigType.LIST:
            raise InvalidConfigurationError(f"Can't {kind.name} to key {key} because its type is not LIST.")
        existing = result.get(key)
        if existing is None:
            existing = current()
        items = [item.strip() for item in existing.split(",") if item.strip()]
        given = [item.strip() for item in (value or "").split(",") if item.strip()]
        if kind is AlterConfigOp.APPEND:
            for item in given:  # each item once, even when given twice (Kafka's APPEND)
                if item not in items:
                    items.append(item)
        else:
            items = [item for item in items if item not in given]
        result[key] = ",".join(items)
    return result
