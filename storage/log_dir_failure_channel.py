"""LogDirFailureChannel: how an I/O error in any thread takes its whole log dir offline.

Any code doing log I/O that gets an OSError (ENOSPC, EIO, EROFS...) calls
`maybe_add_offline_log_dir(dir, ...)` and raises KafkaStorageError to its caller. The dir is
recorded once; the single failure handler (LogManager's) takes it with
`take_next_offline_log_dir()` and removes the dir from service, so other dirs keep serving and
the broker halts only when the last dir is gone. An offline dir stays offline until restart.

The queue holds each dir at most once (the first report wins), so it can never overflow.
"""
from __future__ import annotations

import logging
import queue
import threading
from pathlib import Path

logger = logging.getLogger(__name__)


class LogDirFailureChannel:
    def __init__(self) -> None:
        self._offline: dict[Path, str] = {}
        self._lock = threading.Lock()
        self._queue: "queue.SimpleQueue[Path]" = queue.SimpleQueue()

    def has_offline_log_dir(self, log_dir: Path | str) -> bool:
        return Path(log_dir) in self._offline

    def offline_log_dirs(self) -> dict[Path, str]:
        with self._lock:
            return dict(self._offline)

    def maybe_add_offline_log_dir(self, log_dir: Path | str, message: str, exc: BaseException | None = None) -> bool:
        """Record `log_dir` as failed (once). Returns True for the first report of this dir."""
        d = Path(log_dir)
        with self._lock:
            if d in self._offline:
                return False
            self._offline[d] = message
        logger.error("%s (log dir %s goes offline)", message, d, exc_info=exc)
        self._queue.put(d)
        return True

    def take_next_offline_log_dir(self, timeout: float | None = None) -> Path | None:
        """Block until a dir fails (None on timeout)."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
