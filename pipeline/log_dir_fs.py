"""Where a log directory lives: a local path, or a copy on any filesystem pyarrow reaches.

On a cluster, Spark's executors do not share the broker's disk. A log directory copied
to an object store (or HDFS) is read from there, as Kafka's tiered storage keeps its
segments: `s3://bucket/prefix` (or Hadoop's `s3a://`), `gs://...`, `hdfs://...`, `abfs://...`. Options of the
filesystem travel in the URI's query, as pyarrow's `FileSystem.from_uri` reads them
(`s3://bucket/logs?endpoint_override=http://127.0.0.1:9000&scheme=http`); credentials
come from the usual environment (AWS_ACCESS_KEY_ID, ...).

A local path (or a `file://` URI) is not handled here: the local reader keeps what only
a local file gives (an inode to tell a swapped segment from its replacement).
"""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import msgspec
from pyarrow import fs as pafs

__all__ = ["RemoteLogDir", "remote_log_dir", "filesystem", "list_dir", "read_bytes", "read_text"]


class RemoteLogDir(msgspec.Struct, frozen=True):
    uri: str  # as given, query included: how a Spark worker opens the same filesystem
    path: str  # the directory inside that filesystem


def remote_log_dir(location: str) -> RemoteLogDir | None:
    """The filesystem and path of a log dir given as a URI; None for a local path. Hadoop's
    `s3a://` names the same store as pyarrow's `s3://`."""
    scheme = urlsplit(location).scheme
    if len(scheme) <= 1 or scheme == "file":  # "" or a Windows drive letter: local
        return None
    if scheme == "s3a":
        location = "s3" + location[len("s3a"):]
    _, path = pafs.FileSystem.from_uri(location)
    return RemoteLogDir(location, path.rstrip("/"))


_FILESYSTEMS: dict[str, pafs.FileSystem] = {}
_LOCK = threading.Lock()


def filesystem(uri: str) -> pafs.FileSystem:
    """The filesystem of `uri`, made once per process (a Spark worker reads many slices)."""
    with _LOCK:
        found = _FILESYSTEMS.get(uri)
        if found is None:
            found = _FILESYSTEMS[uri] = pafs.FileSystem.from_uri(uri)[0]
        return found


def list_dir(uri: str, path: str) -> list[pafs.FileInfo]:
    """The entries directly in `path` (an object store's "directories" are key prefixes)."""
    return list(filesystem(uri).get_file_info(pafs.FileSelector(path, allow_not_found=True)))


def read_bytes(uri: str, path: str, start: int = 0, length: int | None = None) -> bytes | None:
    """Bytes [start, start + length) of a file (to its end without `length`); None if it is gone."""
    fs = filesystem(uri)
    try:
        with fs.open_input_file(path) as f:
            if length is None:
                length = f.size() - start
            return bytes(f.read_at(length, start)) if length > 0 else b""
    except FileNotFoundError:
        return None


def read_text(uri: str, path: str) -> str | None:
    data = read_bytes(uri, path)
    return None if data is None else data.decode()
