"""The log cleaner's gauges on the broker's Prometheus endpoint (`serve --metrics-port`)."""
from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from metrics_endpoint import MetricsBroker, scrape

pytestmark = pytest.mark.timeout(120)


def test_cleaner_gauges_are_served(tmp_path: Path) -> None:
    with MetricsBroker(log_dir=tmp_path, monitor=True) as b:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        admin.create_topics([NewTopic("m", 1, 1, config={"cleanup.policy": "compact"})])["m"].result(15)
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        for i in range(5_000):
            p.produce("m", key=b"k%d" % (i % 10), value=b"v%d" % i)
        assert p.flush(30) == 0
        b.clean_now("m")

        samples = scrape(b.metrics_port)

        dir_label = f'{{log_dir="{tmp_path}"}}'
        for name in ("max_dirty_percent", "dead_threads", "max_compaction_delay_secs", "time_since_last_run_ms",
                     "max_buffer_utilization_percent", "cleaner_recopy_percent", "max_clean_time_secs"):
            assert f"asyncbroker_log_cleaner_{name}" in samples, name
        assert samples[f"asyncbroker_log_cleaner_uncleanable_partitions_count{dir_label}"] == 0
        assert samples[f"asyncbroker_log_cleaner_uncleanable_bytes{dir_label}"] == 0
        assert samples["asyncbroker_log_cleaner_dead_threads"] == 0
        assert 0 < samples["asyncbroker_log_cleaner_cleaner_recopy_percent"] < 100
        assert samples["asyncbroker_log_cleaner_max_clean_time_secs"] > 0


def test_no_cleaner_gauges_when_disabled(tmp_path: Path) -> None:
    with MetricsBroker(["log.cleaner.enable=false"], log_dir=tmp_path) as b:
        samples = scrape(b.metrics_port)
        assert "asyncbroker_topics" in samples
        assert not [name for name in samples if name.startswith("asyncbroker_log_cleaner_")]
