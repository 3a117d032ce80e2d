"""A group manager that is built the first time a group of its kind is needed.

Most brokers here only ever see classic groups (librdkafka's and the Java client's default
protocol). KIP-848's ConsumerGroupManager and KIP-932's ShareGroupManager, with their
assignors, the metadata hash (xxhash) and the share coordinator, hold about 1.3 MB of a
broker's memory once imported. The GroupCoordinator keeps each in a LazyGroupManager: it
reads as a manager with no groups until a request, or a record loaded from
`__consumer_offsets`, needs a group of that kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar, cast


class HoldsGroups(Protocol):
    @property
    def groups(self) -> Mapping[str, Any]: ...


M = TypeVar("M", bound=HoldsGroups)
G = TypeVar("G")

_NO_GROUPS: Mapping[str, Any] = {}


class LazyGroupManager(Generic[M, G]):
    """The manager `build` makes, made once; `groups` (of type G) is empty until then."""

    __slots__ = ("_build", "_manager")

    def __init__(self, build: Callable[[], M]) -> None:
        self._build = build
        self._manager: M | None = None

    @property
    def manager(self) -> M:
        """The manager, built now if it is not yet: for what makes or changes a group."""
        if self._manager is None:
            self._manager = self._build()
        return self._manager

    @property
    def built(self) -> M | None:
        """The manager if one was built; None means there is no group of this kind."""
        return self._manager

    @property
    def groups(self) -> Mapping[str, G]:
        """The groups of this kind, without building a manager to learn there are none."""
        return cast("Mapping[str, G]", _NO_GROUPS if self._manager is None else self._manager.groups)
