"""FileRecords opens an existing .log lazily, on its first read. A cleaner swap renames a
segment (and retention deletes it) while a fetch may read it on a reader thread: the lazy open
must never look for a name that has just gone."""

from __future__ import annotations

import threading
from pathlib import Path

from storage.file_records import FileRecords


def existing(path: Path, data: bytes) -> FileRecords:
    path.write_bytes(data)
    return FileRecords.open(path, file_already_exists=True)  # not opened yet


def test_a_never_opened_file_is_read_after_its_rename(tmp_path: Path) -> None:
    records = existing(tmp_path / "00000000000000000000.log", b"abcdef")
    records.rename_to(tmp_path / "00000000000000000000.log.deleted")
    assert records.read(1, 3) == b"bcd"


def test_a_deleted_file_is_still_read_by_whoever_holds_it(tmp_path: Path) -> None:
    # As Kafka's FileChannel: the bytes stay readable until the holder closes it.
    records = existing(tmp_path / "00000000000000000000.log", b"abcdef")
    assert records.delete_if_exists()
    assert not (tmp_path / "00000000000000000000.log").exists()
    assert records.read(0, 6) == b"abcdef"
    records.close()


def test_lazy_opens_on_a_reader_thread_race_renames_without_error(tmp_path: Path) -> None:
    count = 2000
    files = [existing(tmp_path / f"{i:020d}.log", b"%d" % i) for i in range(count)]
    errors: list[BaseException] = []
    start = threading.Barrier(2, timeout=30)

    def read_all() -> None:
        start.wait()
        for i, records in enumerate(files):
            try:
                assert records.read(0, len(b"%d" % i)) == b"%d" % i
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    reader = threading.Thread(target=read_all)
    reader.start()
    start.wait()
    for i, records in enumerate(files):
        records.rename_to(tmp_path / f"{i:020d}.log.deleted")
    reader.join(timeout=60)
    assert not reader.is_alive()
    assert errors == []
    for records in files:
        records.close()
