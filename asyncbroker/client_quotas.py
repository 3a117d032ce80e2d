"""ClientQuotas: the client quotas of this node (AlterClientQuotas, DescribeClientQuotas), kept
durably, and which one applies to a request.

A quota entity names a user, a client id, both, or an IP address; a name of None is the
entity type's default (`--entity-default` in kafka-configs.sh). Each entity holds values for
the keys its type allows (producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate; connection_creation_rate for IPs). For a request from (user, client
id), the first entity in Kafka's precedence order that has a value for the key wins:

    user+client-id, user+default client-id, user, default user+client-id,
    default user+default client-id, default user, client-id, default client-id

and the quota is shared by every connection that entity covers (`sensor_key`): a user quota
by all of the user's clients, a client-id quota by all users of that client id.

Kafka keeps quotas in its metadata log (ClientQuotaRecord). Here they go to
`asyncbroker-client-quotas.json` in every log directory, written atomically on every change;
the newest copy wins at startup.
"""
from __future__ import annotations

import logging
import math
import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import msgspec

from storage.cluster_metadata import first_cluster_metadata

from asyncbroker.log_dir_file import AsyncLogDirFile

__all__ = ["CLIENT_QUOTAS_FILE", "USER", "CLIENT_ID", "IP", "Entity", "ClientQuotas", "QuotaError",
           "entity_text", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE", "CONTROLLER_MUTATION_RATE"]

log = logging.getLogger(__name__)

CLIENT_QUOTAS_FILE = "asyncbroker-client-quotas.json"
USER, CLIENT_ID, IP = "user", "client-id", "ip"
# The order Kafka lists an entity's parts in (its HashMap's), in answers and messages.
_ENTITY_ORDER = {CLIENT_ID: 0, USER: 1, IP: 2}
PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE = "producer_byte_rate", "consumer_byte_rate"
REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE = "request_percentage", "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"
# Key -> (allowed on user/client-id entities, on IP entities, Java type)
_KEYS: dict[str, tuple[bool, bool, str]] = {
    PRODUCER_BYTE_RATE: (True, False, "LONG"), CONSUMER_BYTE_RATE: (True, False, "LONG"),
    REQUEST_PERCENTAGE: (True, False, "DOUBLE"), CONTROLLER_MUTATION_RATE: (True, False, "DOUBLE"),
    CONNECTION_CREATION_RATE: (False, True, "INT"),
}
_LIMITS = {"LONG": 2**63 - 1, "INT": 2**31 - 1}

# An entity: (type, name or None for the default) pairs in Kafka's order.
Entity = tuple[tuple[str, str | None], ...]

# MATCH_TYPE_* of a DescribeClientQuotas filter component.
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2


class QuotaError(Exception):
    """A refused alteration or filter: INVALID_REQUEST (or `error_code`), with Kafka's message."""

    def __init__(self, message: str, error_code: int = 42) -> None:
        super().__init__(message)
        self.error_code = error_code


def entity_of(parts: Sequence[tuple[str, str | None]]) -> Entity:
    """An entity from a request's parts; a type named twice keeps its last name, as Kafka's map does."""
    named: dict[str, str | None] = {}
    for entity_type, name in parts:
        named[entity_type] = name
    return tuple(sorted(named.items(), key=lambda p: _ENTITY_ORDER.get(p[0], 3)))


def entity_text(entity: Entity) -> str:
    """As Kafka's ClientQuotaEntity prints itself."""
    return "ClientQuotaEntity(entries={" + ", ".join(f"{t}={'null' if n is None else n}" for t, n in entity) + "})"


class _StoredEntry(msgspec.Struct):
    entity: list[tuple[str, str | None]]
    quotas: dict[str, float]


class ClientQuotas:
    """Entity -> {key: value}, with the lookups the quota managers make per request cached
    until the next change."""

    def __init__(self, log_dirs: Sequence[str | Path]) -> None:
        self.log_dirs = [Path(d) for d in log_dirs]
        self._file = AsyncLogDirFile(self.log_dirs, CLIENT_QUOTAS_FILE)
        self._quotas: dict[Entity, dict[str, float]] = self._read()
        # Bumped on every change: the quota managers drop what they resolved before.
        self.generation = 0

    # -- lookups

    def __bool__(self) -> bool:
        """Whether any quota is set (when none is, requests skip the quota managers)."""
        return bool(self._quotas)

    def entries(self) -> dict[Entity, dict[str, float]]:
        return {e: dict(v) for e, v in self._quotas.items()}

    def resolve(self, key: str, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        """The quota on `key` for a request from (user, client id) and the sensor it is counted
        on ((user, "") for a user-wide quota, ("", client id) for a client-wide one, both for
        a user+client one); None when no entity sets the key."""
        quotas = self._quotas
        if not quotas:
            return None
        candidates: tuple[tuple[Entity, tuple[str, str]], ...] = (
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        )
        for entity, sensor in candidates:
            value = quotas.get(entity, {}).get(key)
            if value is not None:
                return value, sensor
        return None

    def ip_connection_rate(self, address: str) -> float | None:
        """The connection_creation_rate quota of an address: its own, else the IP default."""
        for entity in (((IP, address),), ((IP, None),)):
            value = self._quotas.get(entity, {}).get(CONNECTION_CREATION_RATE)
            if value is not None:
                return value
        return None

    def describe(self, components: Sequence[tuple[str, int, str | None]], strict: bool) -> list[tuple[Entity, dict[str, float]]]:
        """DescribeClientQuotas: the entities every component matches (and, with `strict`, no
        other entity type). QuotaError for a filter Kafka refuses."""
        seen: set[str] = set()
        for entity_type, match_type, match in components:
            if entity_type in seen:
                raise QuotaError(f"Entity type {entity_type} cannot appear more than once in the filter.")
            seen.add(entity_type)
            if entity_type not in _ENTITY_ORDER:
                raise QuotaError(f"Unsupported entity type {entity_type}", error_code=35)
            if match_type == MATCH_EXACT and match is None:
                raise QuotaError("Request specified MATCH_TYPE_EXACT, but set match string to null.")
            if match_type == MATCH_DEFAULT and match is not None:
                raise QuotaError("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
            if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
                raise QuotaError(f"Unknown match type {match_type}")
        if IP in seen and seen & {USER, CLIENT_ID}:
            raise QuotaError("Invalid entity filter component combination. IP filter component should not be used "
                             "with user or clientId filter component.")
        out = []
        for entity, values in self._quotas.items():
            parts = dict(entity)
            if strict and set(parts) != seen:
                continue
            if all(t in parts and (m == MATCH_ANY or (m == MATCH_DEFAULT and parts[t] is None)
                                   or (m == MATCH_EXACT and parts[t] == name))
                   for t, m, name in components):
                out.append((entity, dict(values)))
        return out

    # -- changes

    def check(self, entity: Entity, ops: Sequence[tuple[str, float, bool]]) -> None:
        """Kafka's checks of one alteration (entity, then each op), QuotaError when refused."""
        if not entity:
            raise QuotaError("Invalid empty client quota entity")
        types = {t for t, _ in entity}
        for entity_type, name in entity:
            if entity_type not in _ENTITY_ORDER:
                raise QuotaError(f"Unhandled client quota entity type: {entity_type}")
            if name == "":
                raise QuotaError(f"Empty {entity_type} not supported")
        is_ip = IP in types
        if is_ip and len(types) > 1:
            raise QuotaError("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
        if is_ip:
            address = dict(entity)[IP]
            if address is not None and not _is_address(address):
                raise QuotaError(f"{address} is not a valid IP or resolvable host.")
        for key, value, remove in ops:
            allowed = _KEYS.get(key)
            if allowed is None or not allowed[1 if is_ip else 0]:
                raise QuotaError(f"Invalid configuration key {key}")
            if remove:
                continue
            if not math.isfinite(value):
                raise QuotaError(f"Quota {key} must be a finite number")
            if value <= 0:
                raise QuotaError(f"Quota {key} must be greater than 0")
            java_type = allowed[2]
            if java_type in _LIMITS:
                if value != math.floor(value):
                    raise QuotaError(f"{key} cannot be a fractional value.")
                if value > _LIMITS[java_type]:
                    article = "an" if java_type == "INT" else "a"
                    raise QuotaError(f"Proposed value for {key} is too large for {article} {java_type}.")

    def apply(self, entity: Entity, ops: Sequence[tuple[str, float, bool]]) -> None:
        """Set and remove values of a checked alteration; `persist` makes it durable."""
        values = self._quotas.setdefault(entity, {})
        for key, value, remove in ops:
            if remove:
                values.pop(key, None)
            else:
                values[key] = float(value)
            log.info("%s %s quota for %s%s", "Removing" if remove else "Changing", key, entity_text(entity),
                     "" if remove else f" to {value}")
        if not values:
            del self._quotas[entity]
        self.generation += 1

    async def persist(self, run_blocking: Callable[..., Awaitable[None]]) -> None:
        """Write the quotas as they are now to every log directory, off the loop."""
        await self._file.persist(lambda: msgspec.json.format(msgspec.json.encode([
            _StoredEntry(list(e), v) for e, v in sorted(self._quotas.items(), key=lambda ev: repr(ev[0]))]),
            indent=1), run_blocking)

    def _read(self) -> dict[Entity, dict[str, float]]:
        for path, data in self._file.copies():
            try:
                entries = msgspec.json.decode(data, type=list[_StoredEntry])
            except (msgspec.DecodeError, msgspec.ValidationError) as exc:
                log.error("Ignoring %s, which does not hold client quotas: %s", path, exc)
                continue
            return {entity_of(e.entity): dict(e.quotas) for e in entries}
        # No quota file: a directory Kafka wrote keeps its quotas in the metadata log.
        image = first_cluster_metadata(self.log_dirs)
        if image is None:
            return {}
        return {entity_of(entity): dict(values) for entity, values in image.client_quotas.items()}


def _is_address(text: str) -> bool:
    """An IP address or a name that resolves (Kafka's InetAddress.getByName)."""
    import ipaddress  # only IP quota entities need it

    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(text, None)
        return True
    except (OSError, UnicodeError):
        return False
