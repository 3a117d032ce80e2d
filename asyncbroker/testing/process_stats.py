"""What /proc says about a process under test (a broker, ours or Kafka's JVM, or its helpers):
resident memory, open descriptors, CPU time and I/O counters, for the tests' bounds and the
benches' figures. Linux only, as the benches and the fuzz tests that read them are."""

from __future__ import annotations

import os
from pathlib import Path


def proc_number(pid: int, file: str, key: str) -> int:
    """The number after `key:` in /proc/<pid>/<file> (0 when absent)."""
    for line in Path(f"/proc/{pid}/{file}").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def rss_kib(pid: int, key: str = "VmRSS") -> int:
    """Resident memory in KiB (`key` VmHWM: its peak)."""
    return proc_number(pid, "status", key)


def fd_count(pid: int) -> int:
    """Open file descriptors: sockets, segment files, indexes, pipes."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds a process has used (all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
