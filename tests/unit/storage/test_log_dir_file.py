"""LogDirFile: a state file kept whole in every log directory, read back from its newest copy
that decodes; JSON written with keys sorted, as the stdlib wrote it before (files written then
read back the same)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from storage.log_dir_file import LogDirFile, encode_json

STATE = {"topic-b": {"retention.ms": "100", "cleanup.policy": "compact"}, "topic-a": {}, "tópico": {"k": "v\"é"}}


def test_every_dir_gets_a_copy_and_the_newest_is_read(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    file = LogDirFile(dirs, "state.json")
    assert file.newest_json() is None
    file.write(encode_json(STATE))
    assert [json.loads((d / "state.json").read_bytes()) for d in dirs] == [STATE, STATE]
    assert file.newest_json() == STATE
    # An older copy elsewhere loses to the newest one.
    (dirs[1] / "state.json").write_bytes(encode_json({"old": {}}))
    os.utime(dirs[1] / "state.json", (1, 1))
    assert file.newest_json() == STATE


def test_a_garbled_newest_copy_is_passed_over(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    file = LogDirFile(dirs, "state.json")
    file.write(encode_json(STATE))
    os.utime(dirs[1] / "state.json", (1, 1))
    (dirs[0] / "state.json").write_bytes(encode_json(STATE)[:-7])  # torn, and the newest
    assert file.newest_json() == STATE
    (dirs[1] / "state.json").write_bytes(b"\xff not json")
    os.utime(dirs[1] / "state.json", (1, 1))
    assert file.newest_json() is None


def test_the_layout_is_the_stdlib_json_one_and_its_files_read_the_same(tmp_path: Path) -> None:
    """Sorted keys, one space an indent: what json.dumps(sort_keys=True, indent=1) wrote, except
    that non-ASCII characters are written as UTF-8 rather than escaped; files the stdlib wrote
    (escaped) read back as the same state."""
    ascii_state = {k: v for k, v in STATE.items() if k.isascii() and all(x.isascii() for x in v.values())}
    assert encode_json(ascii_state) == json.dumps(ascii_state, sort_keys=True, indent=1).encode()
    assert json.loads(encode_json(STATE)) == STATE
    (tmp_path / "state.json").write_bytes(json.dumps(STATE, sort_keys=True, indent=1).encode())
    assert LogDirFile([tmp_path], "state.json").newest_json() == STATE
