"""LogManager: every partition log across `log.dirs`.

Locks each directory, stamps `meta.properties`, loads (and if needed recovers) all logs in
parallel at startup, places new partitions in the directory with the fewest, deletes
partitions by renaming them `-delete` first, and writes the offset checkpoints and the
clean-shutdown marker. Periodic jobs are plain methods the service schedules.
"""
from __future__ import annotations

import fcntl
import logging
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Callable

import msgspec

from storage import fault_injection
from storage.atomic_file import fsync_dir, write_atomically
from storage.clock import SYSTEM_CLOCK, Clock
from storage.cluster_metadata import CLUSTER_METADATA_DIR, read_cluster_metadata
from storage.log_dir_file import LogDirFile, encode_json
from storage.errors import KafkaStorageError, LogDirLockedError
from storage.log import Log
from storage.log_config import LogConfig
from storage.log_dir_failure_channel import LogDirFailureChannel
from storage.log_file_utils import CLEAN_SHUTDOWN_FILE, DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX
from storage.meta_properties import MetaProperties, random_kafka_uuid, read_meta_properties, write_meta_properties
from storage.offset_checkpoint import (
    LOG_START_OFFSET_CHECKPOINT_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CorruptCheckpointError,
    OffsetCheckpointFile,
)
from storage.topic_name import validate_topic_name
from storage.topic_partition import TopicPartition

logger = logging.getLogger(__name__)

_NO_LOGS: Mapping[int, Log] = MappingProxyType({})

LOCK_FILE = ".lock"
TOPIC_CONFIGS_FILE = "asyncbroker-topic-configs.json"
"""Topic config overrides. Kafka keeps them in its KRaft metadata log: a log dir Kafka wrote,
without this file, takes them from there (storage.cluster_metadata)."""
REMOTE_INDEX_CACHE_DIR = "remote-log-index-cache"


class TopicInfo(msgspec.Struct, frozen=True):
    name: str
    topic_id: uuid.UUID | None
    partition_count: int


LOG_CREATION_THREADS = 8
"""Threads creating the partitions of one new topic: creating a log is mostly waiting on the file
system (a directory, its files, five fsyncs), and the fsyncs of concurrent creations share the
journal's commits."""


class LogManager:
    def __init__(self, log_dirs: list[Path] | list[str], default_config: LogConfig | None = None, *,
                 clock: Clock = SYSTEM_CLOCK, node_id: int = 1, cluster_id: str | None = None,
                 recovery_threads_per_data_dir: int = 2, file_delete_delay_ms: int | None = None,
                 log_dir_failure_channel: LogDirFailureChannel | None = None,
                 halt: Callable[[str], None] | None = None, remote_storage_system_enable: bool = False) -> None:
        self.log_dirs = [Path(d).resolve() for d in log_dirs]
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise KafkaStorageError(f"Duplicate log directory found: {', '.join(map(str, log_dirs))}")
        # Called (from whichever thread) when a compacted log may have something to clean: it
        # has a segment before its active one (the cleaner never cleans the active segment) and
        # has just rolled, been created so (over existing segments), or become compacted by its
        # topic's overrides or the broker's defaults. The broker starts its LogCleaner then, not
        # before (note_compaction).
        self.compaction_listener: Callable[[], None] | None = None
        # The broker's log defaults (log.* keys), under every topic's overrides, for the logs
        # created from now on: whoever changes them updates the open logs' configs, then calls
        # note_compaction.
        self.default_config = default_config or LogConfig()
        self.clock = clock
        self.node_id = node_id
        self.cluster_id = cluster_id
        self.recovery_threads_per_data_dir = max(1, recovery_threads_per_data_dir)
        self.file_delete_delay_ms = (self.default_config.file_delete_delay_ms
                                     if file_delete_delay_ms is None else file_delete_delay_ms)
        self.directory_ids: dict[Path, str] = {}
        self.had_clean_shutdown: dict[Path, bool] = {}
        self._logs: dict[TopicPartition, Log] = {}
        # The same logs by topic, then partition: a fetch looks up many partitions of few topics.
        self._topic_logs: dict[str, dict[int, Log]] = {}
        # And how many sit in each directory: placing a new partition counts them, and a count
        # over every log made creating a topic of N partitions cost N^2 (1,000: 5 s).
        self._logs_in_dir: dict[Path, int] = {}
        self._lock = threading.RLock()  # Kafka's logCreationOrDeletionLock
        self._checkpoint_lock = threading.Lock()  # one writer per checkpoint file at a time
        self._dir_locks: dict[Path, int] = {}
        self._logs_to_delete: list[tuple[Path, int]] = []
        # Called (from whichever thread deleted the log) when a directory joins _logs_to_delete:
        # the delete-logs job sleeps until then, as Kafka's blocks on its queue.
        self.deletion_listener: Callable[[], None] | None = None
        self._topic_configs: dict[str, dict[str, str]] = {}
        self._flusher: ThreadPoolExecutor | None = None
        self._started = False
        self.log_dir_failure_channel = log_dir_failure_channel or LogDirFailureChannel()
        self._offline_dirs: set[Path] = set()
        self._halt = halt or _halt_process
        self._failure_handler: threading.Thread | None = None
        self._stopping = threading.Event()
        # remote.log.storage.system.enable: tiered topics' logs keep a start offset below their
        # first local segment and retain locally only what is copied (storage.log.Log).
        self.remote_storage_system_enable = remote_storage_system_enable

    def note_compaction(self, logs: Iterable[Log]) -> None:
        """Calls compaction_listener when one of `logs` is compacted and has a segment before
        its active one."""
        listener = self.compaction_listener
        if listener is not None and any(log.config.compact and log.num_segments > 1 for log in logs):
            listener()

    def _on_roll(self, log: Log) -> None:
        self.note_compaction((log,))

    # -- startup --------------------------------------------------------------------------------
    def startup(self, on_loaded: Callable[[Log], None] | None = None) -> None:
        """Lock the dirs, read their metadata and open every log found, each handed to
        `on_loaded` on its recovery thread (the broker's becoming leader of it) before its
        leader-epoch checkpoint is written."""
        for d in self.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        self._lock_log_dirs()
        try:
            self._load_meta_properties()
            self._topic_configs = self._read_topic_configs()
            self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-flusher")
            self._load_logs(on_loaded)
        except BaseException:
            self._unlock_log_dirs()
            raise
        self._started = True
        self._stopping.clear()
        self._failure_handler = threading.Thread(target=self._handle_log_dir_failures,
                                                 name="LogDirFailureHandler", daemon=True)
        self._failure_handler.start()

    def _lock_log_dirs(self) -> None:
        for d in self.log_dirs:
            fd = os.open(d / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                self._unlock_log_dirs()
                raise LogDirLockedError(
                    f"Failed to acquire lock on file .lock in {d}. A Kafka instance in another process or "
                    f"thread is using this directory."
                ) from None
            self._dir_locks[d] = fd

    def _unlock_log_dirs(self) -> None:
        for fd in self._dir_locks.values():
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._dir_locks.clear()

    # -- disk failure -----------------------------------------------------------------------------
    @property
    def live_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self._offline_dirs]

    @property
    def offline_log_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d in self._offline_dirs]

    def _handle_log_dir_failures(self) -> None:
        """The LogDirFailureHandler thread: drain the channel, take each failed dir offline."""
        channel = self.log_dir_failure_channel
        while not self._stopping.is_set():
            d = channel.take_next_offline_log_dir(timeout=0.5)
            if d is not None:
                try:
                    self.handle_log_dir_failure(d)
                except Exception:  # noqa: BLE001 - the handler must survive to take later dirs
                    logger.exception("Error while taking log dir %s offline", d)

    def handle_log_dir_failure(self, log_dir: Path) -> None:
        """Kafka's LogManager.handleLogDirFailure: stop serving every log in `log_dir`.

        Its logs stay registered but closed, so produce/fetch on them answer
        KAFKA_STORAGE_ERROR while partitions in other dirs keep serving. Nothing is written
        to the dir any more (no checkpoints, no clean-shutdown marker): the next start
        recovers it from its files. The broker halts when no live dir is left.
        """
        d = Path(log_dir).resolve()
        with self._lock:
            if d not in self.log_dirs or d in self._offline_dirs:
                return
            self._offline_dirs.add(d)
            if not self.live_log_dirs:
                self._halt(f"Shutdown broker because all log dirs in {', '.join(map(str, self.log_dirs))} have failed")
                return
            offline = [log for log in self._logs.values() if log.dir.parent == d]
            for log in offline:
                log.close_handlers()
            fd = self._dir_locks.pop(d, None)
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        logger.error("Stopped serving %d partition(s) in the offline log dir %s: %s", len(offline), d,
                     ", ".join(str(log.topic_partition) for log in offline))

    def _report_io_error(self, d: Path, message: str, exc: OSError) -> KafkaStorageError:
        self.log_dir_failure_channel.maybe_add_offline_log_dir(d, f"{message}: {exc}", exc)
        return KafkaStorageError(f"{message}: {exc}")

    def _load_meta_properties(self) -> None:
        metas = {d: read_meta_properties(d) for d in self.log_dirs}
        cluster_ids = {m.cluster_id for m in metas.values() if m is not None}
        if self.cluster_id is not None:
            cluster_ids.add(self.cluster_id)
        if len(cluster_ids) > 1:
            raise KafkaStorageError(f"Log directories belong to different clusters: {sorted(cluster_ids)}")
        self.cluster_id = cluster_ids.pop() if cluster_ids else random_kafka_uuid()
        for d, meta in metas.items():
            if meta is not None and meta.node_id != self.node_id:
                raise KafkaStorageError(
                    f"Stored node id {meta.node_id} doesn't match previous node id {self.node_id} in "
                    f"{d / 'meta.properties'}. If you moved your data, make sure your configured node id "
                    f"matches. If you intend to create a new node, you should remove all data in your data "
                    f"directories."
                )
            directory_id = meta.directory_id if meta is not None and meta.directory_id else random_kafka_uuid()
            if meta is None or meta.directory_id != directory_id:
                write_meta_properties(d, MetaProperties(1, self.cluster_id, self.node_id, directory_id))
            self.directory_ids[d] = directory_id

    def _load_logs(self, on_loaded: Callable[[Log], None] | None = None) -> None:
        """Per directory: consume the clean-shutdown marker, read checkpoints, open logs in parallel."""
        jobs = []
        pools = []
        for d in self.log_dirs:
            marker = d / CLEAN_SHUTDOWN_FILE
            had_clean = marker.exists()
            if had_clean:
                # Deleted before loading, so a crash mid-load is treated as unclean next time.
                marker.unlink()
                fsync_dir(d)
            self.had_clean_shutdown[d] = had_clean
            recovery_points = _read_checkpoint(d / RECOVERY_POINT_CHECKPOINT_FILE)
            log_starts = _read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT_FILE)
            pool = ThreadPoolExecutor(max_workers=self.recovery_threads_per_data_dir,
                                      thread_name_prefix=f"log-recovery-{d}")
            pools.append(pool)
            for entry in sorted(os.scandir(d), key=lambda e: e.name):
                if not entry.is_dir() or entry.name in (CLUSTER_METADATA_DIR, REMOTE_INDEX_CACHE_DIR):
                    continue
                path = Path(entry.path)
                if entry.name.endswith(DELETE_DIR_SUFFIX):
                    self._logs_to_delete.append((path, self.clock.milliseconds()))
                    continue
                if entry.name.endswith((FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)):
                    logger.warning("Ignoring %s: future/stray logs are not supported", path)
                    continue
                try:
                    tp = TopicPartition.from_dir_name(entry.name)
                except ValueError:
                    logger.warning("Skipping %s: not a topic-partition directory", path)
                    continue
                jobs.append((tp, pool.submit(self._load_log, path, tp, recovery_points.get(tp, 0),
                                                 log_starts.get(tp, 0), had_clean, on_loaded)))
        try:
            for tp, future in jobs:
                log = future.result()
                if tp in self._logs:
                    raise KafkaStorageError(
                        f"Duplicate log directories for {tp} are found in both {self._logs[tp].dir} and {log.dir}."
                    )
                self._add(tp, log)
        finally:
            for pool in pools:
                pool.shutdown(wait=True)

    def _load_log(self, path: Path, tp: TopicPartition, recovery_point: int, log_start: int,
                  had_clean_shutdown: bool, on_loaded: Callable[[Log], None] | None = None) -> Log:
        log = Log.open(path, self.config_for(tp.topic), clock=self.clock, log_start_offset=log_start,
                       recovery_point=recovery_point, had_clean_shutdown=had_clean_shutdown,
                       background=self._submit_background, log_dir_failure_channel=self.log_dir_failure_channel,
                       remote_storage_system_enable=self.remote_storage_system_enable, roll_listener=self._on_roll,
                       defer_epoch_checkpoint=True)
        if on_loaded is not None:
            on_loaded(log)
        log.leader_epoch_cache.flush()
        return log

    def _submit_background(self, task: Callable[[], None]) -> None:
        flusher = self._flusher
        if flusher is None:
            return
        def run() -> None:
            try:
                task()
            except Exception:  # noqa: BLE001 - a failed async flush leaves the recovery point behind
                logger.exception("Background flush failed")
        try:
            flusher.submit(run)
        except RuntimeError:
            pass  # shutting down: the final flush covers it

    # -- registry -------------------------------------------------------------------------------
    def _add(self, tp: TopicPartition, log: Log) -> None:
        self._logs[tp] = log
        self._topic_logs.setdefault(tp.topic, {})[tp.partition] = log
        self._count_in_dir(log, 1)

    def _count_in_dir(self, log: Log, delta: int) -> None:
        parent = log.dir.parent
        self._logs_in_dir[parent] = self._logs_in_dir.get(parent, 0) + delta

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def topic_logs(self, topic: str) -> Mapping[int, Log]:
        """The topic's open logs by partition (empty when none): a fetch of many partitions asks
        once per topic, then looks each partition up by its number."""
        return self._topic_logs.get(topic, _NO_LOGS)

    def all_logs(self) -> list[Log]:
        return list(self._logs.values())

    def logs_by_dir(self) -> dict[Path, list[Log]]:
        """Logs of every live dir (an offline dir is never written again before a restart)."""
        out: dict[Path, list[Log]] = {d: [] for d in self.live_log_dirs}
        for log in self.all_logs():
            parent = log.dir.parent
            if parent in self._offline_dirs:
                continue
            out.setdefault(parent, []).append(log)
        return out

    def config_for(self, topic: str) -> LogConfig:
        overrides = self._topic_configs.get(topic)
        if not overrides:
            return self.default_config
        return LogConfig.from_props(overrides, self.default_config)

    def _next_log_dir(self, placed: Mapping[Path, int]) -> Path:
        """The live directory holding the fewest partitions (Kafka's placement), counting those
        `placed` there already by the batch being created."""
        live = self.live_log_dirs
        if not live:
            raise KafkaStorageError("No live log directory to place a new partition in")
        counts = self._logs_in_dir
        return min(live, key=lambda d: (counts.get(d, 0) + placed.get(d, 0), self.log_dirs.index(d)))

    def create_log(self, tp: TopicPartition, config: LogConfig | None = None,
                   topic_id: uuid.UUID | None = None) -> Log:
        """Get or create the log of `tp`; a new one goes to the least-loaded directory."""
        return self.create_logs([tp], config, topic_id)[0]

    def create_logs(self, tps: Sequence[TopicPartition], config: LogConfig | None = None,
                    topic_id: uuid.UUID | None = None, *,
                    on_created: Callable[[Log], None] | None = None) -> list[Log]:
        """create_log for each of `tps` (a new topic's partitions), in their order: the new logs'
        files are written on LOG_CREATION_THREADS threads at once, and each new log is handed to
        `on_created` there. Every log opened is registered, even when another failed or its
        `on_created` raised; then the first failure is raised (the caller undoes what it made)."""
        for tp in tps:
            validate_topic_name(tp.topic)
        with self._lock:  # (held throughout, as for one log: no creation or deletion interleaves)
            logs: dict[TopicPartition, Log] = {}
            placed: dict[TopicPartition, Path] = {}
            placed_in_dir: dict[Path, int] = {}
            for tp in tps:
                existing = self._logs.get(tp)
                if existing is not None:
                    if topic_id is not None and existing.topic_id is None:
                        existing.assign_topic_id(topic_id)
                    logs[tp] = existing
                elif tp not in placed:
                    parent = placed[tp] = self._next_log_dir(placed_in_dir)
                    placed_in_dir[parent] = placed_in_dir.get(parent, 0) + 1

            def open_log(tp: TopicPartition, parent: Path) -> tuple[Log, BaseException | None]:
                log = Log.open(parent / tp.dir_name, config or self.config_for(tp.topic), clock=self.clock,
                               background=self._submit_background, topic_id=topic_id,
                               log_dir_failure_channel=self.log_dir_failure_channel,
                               remote_storage_system_enable=self.remote_storage_system_enable,
                               roll_listener=self._on_roll)
                try:
                    if on_created is not None:
                        on_created(log)
                except BaseException as exc:  # noqa: BLE001 - raised by the caller, once registered
                    return log, exc
                return log, None

            errors: list[BaseException] = []
            with ThreadPoolExecutor(max_workers=max(1, min(LOG_CREATION_THREADS, len(placed))),
                                    thread_name_prefix="log-creation") as pool:
                opening = [(tp, parent, pool.submit(open_log, tp, parent)) for tp, parent in placed.items()]
                for tp, parent, future in opening:
                    try:
                        log, failure = future.result()
                    except OSError as exc:
                        errors.append(self._report_io_error(
                            parent, f"Error while creating log for {tp} in dir {parent}", exc))
                        continue
                    except BaseException as exc:  # noqa: BLE001 - raised below, after the others
                        errors.append(exc)
                        continue
                    self._add(tp, log)
                    logs[tp] = log
                    if failure is not None:
                        errors.append(failure)
            # The new partition directories are durable in their parents: one fsync per parent.
            for parent in {placed[tp] for tp in placed if tp in logs}:
                try:
                    fsync_dir(parent)
                except OSError as exc:
                    errors.append(self._report_io_error(parent, f"Error while creating logs in dir {parent}", exc))
        if errors:
            raise errors[0]
        self.note_compaction([logs[tp] for tp in placed])
        return [logs[tp] for tp in tps]

    def delete_log(self, tp: TopicPartition) -> Log | None:
        """Rename the partition directory `<topic>-<p>.<uuid>-delete`; `delete_logs` unlinks it later."""
        return self.delete_partition_logs([tp]).get(tp)

    def delete_partition_logs(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, Log]:
        """delete_log for each of `tps` that has a log (a deleted topic's partitions), then the
        checkpoints of each directory once, as Kafka's asyncDelete of many partitions: written
        after every one of them, each checkpoint listed all the dir's logs, and deleting a topic
        of 1,000 partitions took 17 s. Returns the logs deleted; raises the first I/O error
        (after checkpointing the dirs of those deleted before it)."""
        deleted: dict[TopicPartition, Log] = {}
        parents: set[Path] = set()
        with self._lock:
            try:
                for tp in tps:
                    log = self._logs.pop(tp, None)
                    if log is None:
                        continue
                    self._count_in_dir(log, -1)
                    partitions = self._topic_logs.get(tp.topic)
                    if partitions is not None:
                        partitions.pop(tp.partition, None)
                        if not partitions:
                            del self._topic_logs[tp.topic]
                    parent = log.dir.parent
                    log.close_handlers()
                    target = parent / f"{tp.dir_name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
                    try:
                        log.rename_dir(target)
                        fsync_dir(parent)
                    except OSError as exc:
                        raise self._report_io_error(
                            parent, f"Error while deleting log for {tp} in dir {parent}", exc) from exc
                    fault_injection.fault_point("delete.topic")
                    self._logs_to_delete.append((target, self.clock.milliseconds()))
                    deleted[tp] = log
                    parents.add(parent)
            finally:
                for parent in parents:
                    if parent not in self._offline_dirs:
                        self._checkpoint_dir(parent)
        if deleted and self.deletion_listener is not None:
            self.deletion_listener()
        return deleted

    def delete_logs(self) -> int:
        """Unlink `-delete` directories whose file.delete.delay.ms has passed."""
        now = self.clock.milliseconds()
        with self._lock:
            due = [(p, t) for p, t in self._logs_to_delete if now - t >= self.file_delete_delay_ms]
            self._logs_to_delete = [(p, t) for p, t in self._logs_to_delete if now - t < self.file_delete_delay_ms]
        if due:
            import shutil  # here: with bz2 and lzma it is 0.4 MB that an idle broker never uses

            for path, _ in due:
                shutil.rmtree(path, ignore_errors=True)
        for log in self.all_logs():
            log.delete_pending_files()
        return len(due)

    def next_delete_delay_ms(self) -> int:
        """Kafka's nextDeleteDelayMs: ms until the oldest `-delete` directory is due, or a whole
        file.delete.delay.ms when none is waiting (kafka-delete-logs sleeps this long)."""
        with self._lock:
            if not self._logs_to_delete:
                return self.file_delete_delay_ms
            first = min(enqueued for _, enqueued in self._logs_to_delete)
        return max(0, first + self.file_delete_delay_ms - self.clock.milliseconds())

    def pending_deletes(self) -> list[Path]:
        with self._lock:
            return [p for p, _ in self._logs_to_delete]

    def topics(self) -> dict[str, TopicInfo]:
        """Topics discovered from the logs: name, topic id, partition count."""
        found: dict[str, TopicInfo] = {}
        for tp, log in sorted(self._logs.items()):
            prev = found.get(tp.topic)
            count = max(prev.partition_count if prev else 0, tp.partition + 1)
            topic_id = (prev.topic_id if prev and prev.topic_id else None) or log.topic_id
            found[tp.topic] = TopicInfo(tp.topic, topic_id, count)
        return found

    # -- topic configs --------------------------------------------------------------------------
    def set_topic_config(self, topic: str, overrides: dict[str, str]) -> None:
        """Persist a topic's overrides (atomically, in every dir) and apply them to its logs."""
        config = LogConfig.from_props(overrides, self.default_config)  # validates before persisting
        with self._lock:
            if overrides:
                self._topic_configs[topic] = dict(overrides)
            else:
                self._topic_configs.pop(topic, None)
            LogDirFile(self.log_dirs, TOPIC_CONFIGS_FILE).write(encode_json(self._topic_configs))
            for tp, log in self._logs.items():
                if tp.topic == topic:
                    log.update_config(config)
        self.note_compaction(self.topic_logs(topic).values())

    def topic_config_overrides(self, topic: str) -> dict[str, str]:
        return dict(self._topic_configs.get(topic, {}))

    def _read_topic_configs(self) -> dict[str, dict[str, str]]:
        data = LogDirFile(self.log_dirs, TOPIC_CONFIGS_FILE).newest_json()
        if data is not None:
            return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in data.items()}
        # No readable file of ours: a log dir Kafka wrote keeps the overrides in its metadata log.
        for d in self.log_dirs:
            image = read_cluster_metadata(d)
            if image is not None:
                logger.info("Read the config overrides of %d topic(s) from Kafka's metadata log in %s",
                            len(image.topic_configs), d)
                return image.topic_configs
        return {}

    # -- periodic jobs --------------------------------------------------------------------------
    def flush_dirty_logs(self) -> None:
        """The flush.ms rule for every log."""
        for log in self.all_logs():
            try:
                log.flush_if_due()
            except KafkaStorageError:
                logger.exception("Error flushing %s", log)

    def _write_checkpoint(self, d: Path, name: str, offsets: dict[TopicPartition, int]) -> None:
        """CheckpointFileWithFailureHandler: an I/O error takes the dir offline, other dirs go on.

        Serialized: every writer of one checkpoint goes through the same temp file, and two
        concurrent renames would fail one writer (and take the dir offline)."""
        try:
            with self._checkpoint_lock:
                OffsetCheckpointFile(d / name).write(offsets)
        except OSError as exc:
            self._report_io_error(d, f"Error while writing {name} in dir {d}", exc)

    def checkpoint_recovery_offsets(self) -> None:
        for d, logs in self.logs_by_dir().items():
            self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT_FILE,
                                   {log.topic_partition: log.recovery_point for log in logs})

    def checkpoint_log_start_offsets(self) -> None:
        for d, logs in self.logs_by_dir().items():
            self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT_FILE,
                                   _log_starts_to_checkpoint(logs))

    def checkpoint_high_watermarks(self) -> None:
        for d, logs in self.logs_by_dir().items():
            self._write_checkpoint(d, REPLICATION_OFFSET_CHECKPOINT_FILE,
                                   {log.topic_partition: log.high_watermark for log in logs})

    def _checkpoint_dir(self, d: Path) -> None:
        logs = self.logs_by_dir().get(d, [])
        self._write_checkpoint(d, RECOVERY_POINT_CHECKPOINT_FILE,
                               {log.topic_partition: log.recovery_point for log in logs})
        self._write_checkpoint(d, LOG_START_OFFSET_CHECKPOINT_FILE,
                               _log_starts_to_checkpoint(logs))

    # -- shutdown -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Flush and close every log, write checkpoints and the clean-shutdown marker, unlock."""
        if not self._started:
            return
        self._stopping.set()
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)
            self._flusher = None
        by_dir = self.logs_by_dir()

        def close_dir(logs: list[Log]) -> None:
            for log in logs:
                try:
                    log.flush()
                except KafkaStorageError:
                    pass  # its dir just went offline: it gets no clean-shutdown marker below
                log.close()

        with ThreadPoolExecutor(max_workers=max(1, len(by_dir))) as pool:
            for future in [pool.submit(close_dir, logs) for logs in by_dir.values()]:
                future.result()
        self.checkpoint_recovery_offsets()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        channel = self.log_dir_failure_channel
        for d in [d for d in self.live_log_dirs if not channel.has_offline_log_dir(d)]:
            # Kafka's CleanShutdownFileHandler content; only the file's existence matters on load.
            # Never in an offline dir: its logs may hold a torn tail that recovery must cut.
            try:
                write_atomically(d / CLEAN_SHUTDOWN_FILE, b'{"version":0,"brokerEpoch":-1}')
            except OSError as exc:
                logger.error("Could not write the clean-shutdown marker in %s: %s", d, exc)
        self._unlock_log_dirs()
        self._started = False


def _halt_process(message: str) -> None:
    """Kafka's Exit.halt(1): with no live log dir there is nothing left to serve."""
    logger.critical(message)
    logging.shutdown()
    os._exit(1)


def _log_starts_to_checkpoint(logs: list[Log]) -> dict[TopicPartition, int]:
    """Kafka records a log start offset only where the first segment does not tell it: above
    that segment's base, or on a tiered log (whose start is usually below it, in remote storage)."""
    out = {}
    for log in logs:
        first = log.segments.first_segment()
        if log.remote_log_enabled or (first is not None and log.log_start_offset > first.base_offset):
            out[log.topic_partition] = log.log_start_offset
    return out


def _read_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """A corrupt checkpoint is tolerated: every log then recovers from 0 / its first segment."""
    try:
        return OffsetCheckpointFile(path).read()
    except CorruptCheckpointError:
        logger.warning("Ignoring corrupt checkpoint %s", path)
        return {}
