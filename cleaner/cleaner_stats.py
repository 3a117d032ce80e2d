"""CleanerStats: what one clean read, wrote and dropped, and Kafka's summary log line."""
from __future__ import annotations

import time

import msgspec

__all__ = ["CleanerStats", "format_summary"]


class CleanerStats(msgspec.Struct):
    """Counters of one clean (pass 1 = "index", pass 2 = "clean"). Times are monotonic seconds."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages_read: int = 0
    tombstones_retained: int = 0
    buffer_utilization: float = 0.0
    start_time: float = msgspec.field(default_factory=time.monotonic)
    map_complete_time: float = -1.0
    end_time: float = -1.0
    cpu_secs: float = 0.0
    """CPU time of the worker for this clean (benchmarks on shared machines)."""

    def read_messages(self, messages: int, nbytes: int) -> None:
        self.messages_read += messages
        self.bytes_read += nbytes

    def recopy_messages(self, messages: int, nbytes: int) -> None:
        self.messages_written += messages
        self.bytes_written += nbytes

    def index_messages_read(self, n: int) -> None:
        self.map_messages_read += n

    def index_bytes_read(self, n: int) -> None:
        self.map_bytes_read += n

    def invalid_message(self) -> None:
        self.invalid_messages_read += 1

    def index_done(self) -> None:
        self.map_complete_time = time.monotonic()

    def all_done(self) -> None:
        self.end_time = time.monotonic()

    @property
    def elapsed_secs(self) -> float:
        end = self.end_time if self.end_time >= 0 else time.monotonic()
        return max(end - self.start_time, 1e-9)

    @property
    def elapsed_index_secs(self) -> float:
        end = self.map_complete_time if self.map_complete_time >= 0 else time.monotonic()
        return max(end - self.start_time, 0.0)


def _mb(n: float) -> float:
    return n / (1024 * 1024)


def format_summary(thread_id: int, log_name: str, first_dirty: int, end_offset: int, stats: CleanerStats) -> str:
    """The multi-line INFO message Kafka's LogCleaner.recordStats writes after each clean."""
    elapsed = stats.elapsed_secs
    index_secs = stats.elapsed_index_secs
    clean_secs = max(elapsed - index_secs, 1e-9)
    read = float(stats.bytes_read)
    lines = [
        "",
        f"\tLog cleaner thread {thread_id} cleaned log {log_name} (dirty section = [{first_dirty}, {end_offset}])",
        f"\t{_mb(read):,.1f} MB of log processed in {elapsed:,.1f} seconds ({_mb(read / elapsed):,.1f} MB/sec).",
        f"\tIndexed {_mb(stats.map_bytes_read):,.1f} MB in {index_secs:.1f} seconds "
        f"({_mb(stats.map_bytes_read) / max(index_secs, 1e-9):,.1f} Mb/sec, {100 * index_secs / elapsed:.1f}% of total time)",
        f"\tBuffer utilization: {100 * stats.buffer_utilization:.1f}%",
        f"\tCleaned {_mb(read):,.1f} MB in {clean_secs:.1f} seconds "
        f"({_mb(read) / clean_secs:,.1f} Mb/sec, {100 * clean_secs / elapsed:.1f}% of total time)",
        f"\tStart size: {_mb(read):,.1f} MB ({stats.messages_read:,d} messages)",
        f"\tEnd size: {_mb(stats.bytes_written):,.1f} MB ({stats.messages_written:,d} messages)",
        f"\t{100.0 * (1.0 - stats.bytes_written / read) if read else 0.0:.1f}% size reduction "
        f"({100.0 * (1.0 - stats.messages_written / stats.messages_read) if stats.messages_read else 0.0:.1f}% fewer messages)",
    ]
    return "\n".join(lines) + "\n"
