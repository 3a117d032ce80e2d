"""Helpers of the log-directory checks: which topics are compacted, stopping a broker cleanly."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from confluent_kafka.admin import AdminClient, ConfigResource

from asyncbroker.testing import BrokerProcess
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE


def cleanup_policies(bootstrap: str, timeout: float = 30.0) -> dict[str, str]:
    """Every topic's cleanup.policy, as the broker describes it (internal topics included)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = sorted(admin.list_topics(timeout=timeout).topics)
    if not topics:
        return {}
    futures = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics],
                                     request_timeout=timeout)
    return {resource.name: future.result(timeout)["cleanup.policy"].value for resource, future in futures.items()}


def compacted_predicate(policies: dict[str, str]) -> Callable[[str], bool]:
    """A topic may have offset holes when its cleanup.policy includes compact. A topic the
    broker no longer describes (deleted meanwhile) gets no allowance."""
    return lambda topic: "compact" in policies.get(topic, "").split(",")


def stop_cleanly(broker: BrokerProcess) -> Path:
    """SIGTERM and wait; assert the broker exited 0 and left its clean-shutdown marker."""
    assert broker.returncode is None, f"the broker already exited with {broker.returncode}:\n{broker.output()[-3000:]}"
    code = broker.stop(timeout=60)
    assert code == 0, f"the broker exited with {code}:\n{broker.output()[-3000:]}"
    marker = broker.log_dir / CLEAN_SHUTDOWN_FILE
    assert marker.exists(), f"no {CLEAN_SHUTDOWN_FILE} in {broker.log_dir} after a clean stop"
    return broker.log_dir
