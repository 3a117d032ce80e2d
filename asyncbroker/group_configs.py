"""GroupConfigManager: per-group settings (Kafka's GroupConfig, KIP-848), the GROUP resources of
DescribeConfigs, IncrementalAlterConfigs and AlterConfigs.

A group config overrides, for one group id, the broker key it is named after
(consumer.session.timeout.ms over group.consumer.session.timeout.ms) and must lie within that
key's min/max bounds. A group needs not exist to be configured, and its configs outlive it,
as in Kafka, which keeps them in its metadata log. Here they are kept in every log dir, in
`asyncbroker-group-configs.json` ({group id: {key: value}}); a log dir Kafka wrote has them in
its metadata log instead, read on the first start. The consumer-protocol groups read their
session timeout, heartbeat interval and assignment interval here, at each use, so a change
applies at the members' next heartbeat.

The consumer-protocol and share group keys are served: streams groups and dead-letter queues
are not built here (KNOWN_DIFFERENCES.md KD-212).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from storage.cluster_metadata import read_cluster_metadata
from storage.config_def import GROUP_KEYS, ConfigException, format_value, parse_value
from storage.log_dir_file import LogDirFile, encode_json
from wire.errors import InvalidConfigurationError, InvalidRequestError

from asyncbroker.alter_config_op import apply_op
from asyncbroker.config import ConfigEntry, ConfigSource, ConfigSynonym, KafkaConfig

log = logging.getLogger(__name__)

GROUP_CONFIGS_FILE = "asyncbroker-group-configs.json"

# Group key -> the broker keys bounding it (Kafka's GroupConfig.validateValues).
_BOUNDS: dict[str, tuple[str, str]] = {
    "consumer.session.timeout.ms": ("group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    "consumer.heartbeat.interval.ms": ("group.consumer.min.heartbeat.interval.ms",
                                       "group.consumer.max.heartbeat.interval.ms"),
    "consumer.assignment.interval.ms": ("group.consumer.min.assignment.interval.ms",
                                        "group.consumer.max.assignment.interval.ms"),
    **{f"share.{key}": (f"group.share.min.{key}", f"group.share.max.{key}")
       for key in ("heartbeat.interval.ms", "session.timeout.ms", "record.lock.duration.ms", "delivery.count.limit",
                   "partition.max.record.locks", "assignment.interval.ms")},
}


class GroupConfigManager:
    """Every group's config overrides: validated, persisted, described, and looked up."""

    def __init__(self, config: KafkaConfig, run_blocking: Callable[..., Awaitable[Any]]) -> None:
        self.config = config
        self._run_blocking = run_blocking
        self._file = LogDirFile(config.log_dirs, GROUP_CONFIGS_FILE)
        self.overrides: dict[str, dict[str, str]] = _load(config.log_dirs, self._file)

    # ------------------------------------------------------------ reading

    def value(self, group_id: str, key: str) -> Any:
        """The value in force for `group_id`: its override, else the broker key's."""
        definition = GROUP_KEYS[key]
        raw = self.overrides.get(group_id, {}).get(key)
        if raw is not None:
            return parse_value(definition, raw)
        return self.config.effective(definition.synonyms[0]) if definition.synonyms else definition.default

    def describe(self, group_id: str, keys: Collection[str] | None) -> list[ConfigEntry]:
        """DescribeConfigs for a GROUP resource: every (listed) key with its source and the
        broker key's layers as synonyms, as Kafka answers; unknown keys are left out."""
        if group_id == "":
            raise InvalidRequestError("Group name must not be empty")
        overrides = self.overrides.get(group_id, {})
        wanted = sorted(k for k, d in GROUP_KEYS.items() if not d.internal) if keys is None else \
            [k for k in keys if k in GROUP_KEYS and not GROUP_KEYS[k].internal]
        entries = []
        for key in wanted:
            definition = GROUP_KEYS[key]
            synonyms: list[ConfigSynonym] = []
            if key in overrides:
                synonyms.append(ConfigSynonym(key, overrides[key], ConfigSource.GROUP_CONFIG))
            if definition.synonyms:
                synonyms += self.config.synonyms(definition.synonyms[0])
            else:  # a key of its own (share.auto.offset.reset): its default, named after itself
                synonyms.append(ConfigSynonym(key, format_value(definition.default), ConfigSource.DEFAULT_CONFIG))
            entries.append(ConfigEntry(
                name=key, value=overrides[key] if key in overrides else format_value(self.value(group_id, key)),
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG, read_only=False,
                is_sensitive=False, synonyms=tuple(synonyms), type=definition.type, documentation=definition.doc))
        return entries

    # ------------------------------------------------------------ changing

    async def incremental_alter(self, group_id: str, ops: Sequence[tuple[str, int, str | None]],
                                validate_only: bool) -> None:
        if group_id == "":
            raise InvalidRequestError("Default group resources are not allowed.")
        if len({name for name, _, _ in ops}) != len(ops):
            raise InvalidRequestError("Error due to duplicate config keys")
        overrides = dict(self.overrides.get(group_id, {}))
        for key, op, value in ops:
            overrides = apply_op(GROUP_KEYS, "group", overrides, key, op, value, self._current(group_id, key))
        await self._replace(group_id, overrides, validate_only)

    def _current(self, group_id: str, key: str) -> Callable[[], str]:
        return lambda: format_value(self.value(group_id, key)) or ""

    async def alter(self, group_id: str, configs: Mapping[str, str | None], validate_only: bool) -> None:
        """AlterConfigs: the group's whole override set becomes `configs`."""
        if group_id == "":
            raise InvalidRequestError("Default group resources are not allowed.")
        await self._replace(group_id, {k: v for k, v in configs.items() if v is not None}, validate_only)

    async def _replace(self, group_id: str, overrides: dict[str, str], validate_only: bool) -> None:
        self.validate(overrides)
        if validate_only or overrides == self.overrides.get(group_id, {}):
            return
        updated = {g: dict(o) for g, o in self.overrides.items() if g != group_id}
        if overrides:
            updated[group_id] = overrides
        await self._run_blocking(self._file.write, encode_json(updated))
        self.overrides = updated
        log.info("Updated configs of group %s: %s", group_id, overrides)

    def validate(self, overrides: Mapping[str, str]) -> None:
        """Kafka's GroupConfig.validate: known names, parsable values, within the broker's bounds."""
        for key in overrides:
            if key not in GROUP_KEYS:  # internal keys too: accepted, never described
                raise InvalidConfigurationError(f"Unknown group config name: {key}")
        for key, raw in overrides.items():
            try:
                value = parse_value(GROUP_KEYS[key], raw)
            except ConfigException as exc:
                raise InvalidConfigurationError(str(exc)) from None
            bounds = _BOUNDS.get(key)
            if bounds is not None:
                low, high = (self.config.effective(b) for b in bounds)
                if not low <= value <= high:
                    raise InvalidConfigurationError(f"{key} must be in the range {low} to {high} inclusive.")


def _load(log_dirs: Sequence[str | Path], file: LogDirFile) -> dict[str, dict[str, str]]:
    """The newest copy of the file; else a Kafka log dir's group configs; else none."""
    data = file.newest_json()
    if data is not None:
        return {str(g): {str(k): str(v) for k, v in o.items()} for g, o in data.items()}
    for d in log_dirs:
        image = read_cluster_metadata(Path(d))
        if image is not None:
            return {g: dict(o) for g, o in image.group_configs.items() if o}
    return {}
