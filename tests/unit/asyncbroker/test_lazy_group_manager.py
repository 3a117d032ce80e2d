"""asyncbroker.lazy_group_manager: a manager built once, at the first use that needs one;
reading its groups before then builds nothing."""
from __future__ import annotations

from asyncbroker.lazy_group_manager import LazyGroupManager


class Manager:
    def __init__(self) -> None:
        self.groups: dict[str, int] = {}


def test_reading_groups_builds_no_manager() -> None:
    built: list[Manager] = []
    lazy: LazyGroupManager[Manager, int] = LazyGroupManager(lambda: built.append(Manager()) or built[-1])
    assert dict(lazy.groups) == {} and "g" not in lazy.groups
    assert lazy.built is None and built == []


def test_the_manager_is_built_once_and_its_groups_read_through() -> None:
    built: list[Manager] = []
    lazy: LazyGroupManager[Manager, int] = LazyGroupManager(lambda: built.append(Manager()) or built[-1])
    manager = lazy.manager
    manager.groups["g"] = 7
    assert lazy.manager is manager and lazy.built is manager and len(built) == 1
    assert lazy.groups["g"] == 7
    manager.groups.pop("g")
    assert "g" not in lazy.groups and lazy.built is manager  # no group left: the manager stays
