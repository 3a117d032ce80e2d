"""Kafka's DumpLogSegments as a checker of log directories we wrote.

DumpLogSegments exits 0 even when it finds mismatches: it prints its
complaints among the dump. `check_log_dir` runs it over every
`.log/.index/.timeindex/.txnindex/.snapshot` of a log directory in as few JVM
starts as possible (one run per option set, many files per run, the runs side
by side) and turns its output into typed `Finding`s:

    run "verify":  --deep-iteration --verify-index-only   every file (index entries
                   against the log, time index timestamps against the batches, every
                   batch's CRC, every record's offset, producer snapshots, txn indexes)
    run "sanity":  --index-sanity-check                   .index/.timeindex (the check
                   a broker runs at startup; the tool returns right after it, so the
                   verification needs the run above)
    run "<decoder>": --offsets-decoder (and Kafka's other coordinator decoders)
                   the .log files of the internal topic it decodes

Every line the tool prints is classified; a line we do not recognise is itself
a finding (UNEXPECTED_OUTPUT), so a new kind of complaint cannot pass unseen.
An exception aborts the tool's whole run: the checker records it against the
file being dumped and runs the tool again over the files after it.

"Non-consecutive offsets" is legitimate where offsets have holes: on a
compacted log (the cleaner removes records), decided per topic by the caller's
`compacted` predicate (its cleanup.policy). The tool also reports the first
record of every segment as following offset -1; on a log that is not compacted
that pair is accepted only when the record is the segment's base offset.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jvm.kafka_jvm import DUMP_LOG_SEGMENTS, java_command, shared_classes

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
INDEX_SUFFIXES = (".index", ".timeindex")
# Internal topics whose records Kafka's tool can decode, and the option that does it.
DECODERS: dict[str, str] = {
    "__consumer_offsets": "--offsets-decoder",
    "__transaction_state": "--transaction-log-decoder",
    "__share_group_state": "--share-group-state-decoder",
}
# Directories a broker renamed away from serving (pending deletion or another dir's copy).
SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
# The tool takes its files as one comma-separated argument; Linux caps one argument at
# 128 KiB (MAX_ARG_STRLEN), so long lists are split over several runs.
MAX_FILES_ARG = 120_000


class FindingKind(enum.Enum):
    INDEX_MISMATCH = "offset index entry does not point at the batch ending at its offset"
    TIMESTAMP_MISMATCH = "time index timestamp differs from the batch's largest record timestamp"
    OUT_OF_ORDER_TIMESTAMP = "time index timestamps do not increase"
    INDEXED_OFFSET_NOT_FOUND = "time index offset is not the last offset of a batch"
    NON_CONSECUTIVE_OFFSETS = "record offsets have a hole on a log that is not compacted"
    INVALID_BYTES = "bytes after the last whole batch"
    INVALID_BATCH = "batch CRC does not match"
    SANITY_CHECK_FAILED = "index fails the startup sanity check"
    DECODER_ERROR = "internal topic record the decoder cannot read"
    SNAPSHOT_CORRUPT = "producer snapshot cannot be read"
    EXCEPTION = "the tool failed on the file"
    UNEXPECTED_OUTPUT = "a line the checker does not recognise"


@dataclasses.dataclass(frozen=True)
class Finding:
    kind: FindingKind
    file: Path | None  # None: the tool does not name the file (indexed offsets not found)
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.name} {self.file or '<file not named by the tool>'}: {self.detail}"


@dataclasses.dataclass
class CheckReport:
    """What one check looked at and what it found."""

    files: dict[str, int] = dataclasses.field(default_factory=dict)  # suffix -> files checked
    runs: int = 0  # JVM starts
    findings: list[Finding] = dataclasses.field(default_factory=list)
    accepted_holes: int = 0  # non-consecutive pairs accepted (compacted logs, segment starts)

    def extend(self, other: "CheckReport") -> None:
        for k, v in other.files.items():
            self.files[k] = self.files.get(k, 0) + v
        self.runs += other.runs
        self.findings += other.findings
        self.accepted_holes += other.accepted_holes


def internal_topics_compacted(topic: str) -> bool:
    """The default policy: only the coordinators' internal topics are compacted."""
    return topic in DECODERS


def topic_of(partition_dir: Path) -> str:
    """The topic of a `<topic>-<partition>` directory."""
    return partition_dir.name.rsplit("-", 1)[0]


def partition_dirs(log_dir: Path) -> list[Path]:
    out = []
    for d in sorted(Path(log_dir).iterdir()):
        if not d.is_dir() or d.name.endswith(SKIPPED_DIR_SUFFIXES):
            continue
        name, _, part = d.name.rpartition("-")
        if name and part.isdigit():
            out.append(d)
    return out


def segment_files(log_dir: Path) -> list[Path]:
    return [f for d in partition_dirs(log_dir) for f in sorted(d.iterdir())
            if f.is_file() and f.name.endswith(SEGMENT_SUFFIXES)]


def check_log_dir(log_dir: Path | str, compacted: Callable[[str], bool] = internal_topics_compacted,
                  *, timeout: float = 600.0) -> CheckReport:
    """Run DumpLogSegments over every segment file of `log_dir`; `compacted(topic)` says whether a
    topic's cleanup.policy includes compact (its logs may have offset holes)."""
    return check_files(segment_files(Path(log_dir)), compacted, timeout=timeout)


def check_files(files: Iterable[Path], compacted: Callable[[str], bool] = internal_topics_compacted,
                *, timeout: float = 600.0) -> CheckReport:
    """Run DumpLogSegments over `files` (segment files inside `<topic>-<partition>` directories)."""
    files = [Path(f).resolve() for f in files]
    report = CheckReport()
    for f in files:
        suffix = f.suffix
        report.files[suffix] = report.files.get(suffix, 0) + 1
    decoded = {f for f in files if f.suffix == ".log" and topic_of(f.parent) in DECODERS}
    plain = [f for f in files if f not in decoded]
    jobs = [(plain, ["--deep-iteration", "--verify-index-only"]),
            ([f for f in files if f.suffix in INDEX_SUFFIXES], ["--index-sanity-check"]),
            *((sorted(f for f in decoded if topic_of(f.parent) == topic), [option])
              for topic, option in DECODERS.items())]
    # The runs side by side: each is mostly a JVM's start (2-3 s here), and they share nothing.
    with ThreadPoolExecutor(max_workers=len(jobs), thread_name_prefix="dump-log-segments") as pool:
        for part in pool.map(lambda job: _run(job[0], job[1], compacted, timeout), jobs):
            report.extend(part)
    return report


def _run(files: Sequence[Path], options: list[str], compacted: Callable[[str], bool], timeout: float) -> CheckReport:
    """Dump `files` with `options`: split to fit one argument, resumed after a file that aborts a run."""
    report = CheckReport()
    pending = list(files)
    while pending:
        chunk, size = [], 0
        for f in pending:
            if chunk and size + len(str(f)) + 1 > MAX_FILES_ARG:
                break
            chunk.append(f)
            size += len(str(f)) + 1
        output, code = _dump(chunk, options, timeout)
        report.runs += 1
        parsed = parse_output(output, code, compacted)
        if code != 0 and parsed.dumped == 0:
            raise RuntimeError(f"DumpLogSegments did not run ({code}):\n{output[-4000:]}")
        report.findings += parsed.findings
        report.accepted_holes += parsed.accepted_holes
        done = parsed.dumped if code != 0 else len(chunk)
        # An aborted run names the file it died on; the files after it still need a run.
        pending = pending[done:]
    return report


def _dump(files: Sequence[Path], options: list[str], timeout: float) -> tuple[str, int]:
    """One JVM start: stdout and stderr in one stream, so a complaint follows the file it is about."""
    args = ["--files", ",".join(str(f) for f in files), *options]
    with shared_classes("tools") as cds:
        result = subprocess.run(
            java_command("tools", DUMP_LOG_SEGMENTS, args, heap="512m", jvm_args=cds), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", timeout=timeout,
            check=False,
        )
    return result.stdout, result.returncode


@dataclasses.dataclass
class ParsedOutput:
    findings: list[Finding]
    dumped: int  # files the tool started on ("Dumping ..." lines)
    accepted_holes: int


# Lines of an ordinary dump (no complaint in them).
_BENIGN = [re.compile(p) for p in (
    r"^Log starting offset: -?\d+$",
    r"^baseOffset: -?\d+ lastOffset: -?\d+ count: \d+ .* isvalid: true$",
    r"^\| offset: -?\d+ (CreateTime|LogAppendTime|NoTimestampType|NO_TIMESTAMP): -?\d+ keySize: -?\d+ valueSize: -?\d+",
    r"^.* passed sanity check\.$",
    r"^.* is empty\.$",
    r"^producerId: -?\d+ producerEpoch: -?\d+ coordinatorEpoch: -?\d+ currentTxnFirstOffset: ",
    r"^version: -?\d+ producerId: -?\d+ firstOffset: -?\d+ lastOffset: -?\d+ lastStableOffset: -?\d+$",
    r"^$",
)]
# The tool's complaints printed where they happen (attributed to the file being dumped).
_INVALID_BYTES = re.compile(r"^Found (\d+) invalid bytes at the end of (\S+)$")
# The complaints the tool collects and prints after the last file: a header naming the file,
# then indented detail lines.
_SECTION_HEADERS: list[tuple[re.Pattern[str], FindingKind]] = [
    (re.compile(r"^Mismatches in :(.+)$"), FindingKind.INDEX_MISMATCH),
    (re.compile(r"^Found timestamp mismatch in :(.+)$"), FindingKind.TIMESTAMP_MISMATCH),
    (re.compile(r"^Found out of order timestamp in :(.+)$"), FindingKind.OUT_OF_ORDER_TIMESTAMP),
    (re.compile(r"^Non-consecutive offsets in (.+)$"), FindingKind.NON_CONSECUTIVE_OFFSETS),
    # Kafka 4.3 names the file; later versions print "... not found in the log." without it.
    (re.compile(r"^The following indexed offsets are not found in(?: the log\.| :(.+))$"),
     FindingKind.INDEXED_OFFSET_NOT_FOUND),
]
_SECTION_DETAIL = re.compile(r"^(\s+\S.*|Indexed offset: -?\d+, found log offset: -?\d+)$")
_FOLLOWED = re.compile(r"^\s+(-?\d+) is followed by (-?\d+)$")
_DECODER_ERROR = re.compile(r"(Error at offset -?\d+|Unknown record type -?\d+ at offset -?\d+)")


def parse_output(output: str, returncode: int, compacted: Callable[[str], bool]) -> ParsedOutput:
    """Classify every line the tool printed (stdout and stderr merged, in order)."""
    findings: list[Finding] = []
    dumped = 0
    accepted = 0
    current: Path | None = None
    section: tuple[FindingKind, Path | None] | None = None
    lines = output.splitlines()
    failure_from = _first_failure_line(lines) if returncode != 0 else len(lines)
    for i, line in enumerate(lines):
        if line.startswith("Dumping "):
            current = Path(line[len("Dumping "):])
            dumped += 1
            section = None
            continue
        header = next(((kind, m) for pattern, kind in _SECTION_HEADERS if (m := pattern.match(line))), None)
        if header is not None:
            kind, m = header
            section = (kind, Path(m.group(1)) if m.lastindex and m.group(1) else None)
            continue
        if section is not None and _SECTION_DETAIL.match(line):
            kind, path = section
            if kind is FindingKind.NON_CONSECUTIVE_OFFSETS and path is not None and _hole_is_legitimate(
                    path, line, compacted):
                accepted += 1
                continue
            findings.append(Finding(kind, path, line.strip()))
            continue
        section = None
        if i >= failure_from:
            findings.append(Finding(FindingKind.EXCEPTION, current, "\n".join(lines[i:])[:4000]))
            break
        if (m := _INVALID_BYTES.match(line)) is not None:
            findings.append(Finding(FindingKind.INVALID_BYTES, current, line))
        elif line.startswith("baseOffset: ") and " isvalid: false" in line:
            findings.append(Finding(FindingKind.INVALID_BATCH, current, line))
        elif (m := _DECODER_ERROR.search(line)) is not None and line.startswith("| offset: "):
            findings.append(Finding(FindingKind.DECODER_ERROR, current, line))
        elif any(p.match(line) for p in _BENIGN):
            continue
        elif current is not None and current.suffix == ".snapshot":
            # A CorruptSnapshotException's message, printed instead of the snapshot's entries.
            findings.append(Finding(FindingKind.SNAPSHOT_CORRUPT, current, line))
        else:
            findings.append(Finding(FindingKind.UNEXPECTED_OUTPUT, current, line))
    if returncode != 0 and not any(f.kind is FindingKind.EXCEPTION for f in findings):
        findings.append(Finding(FindingKind.EXCEPTION, current, f"exit status {returncode}"))
    # --index-sanity-check: a sane index says so; one that fails throws (an EXCEPTION above).
    return ParsedOutput(findings, dumped, accepted)


def _first_failure_line(lines: list[str]) -> int:
    """Where an aborted run's error begins: the line after the last line of the dump that the
    tool printed before it threw (the message, then the stack trace)."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(("\tat ", "Caused by: ", "\t... ")) or lines[i].startswith(
                ("java.", "org.apache.kafka.")):
            continue
        # The message line just above the stack trace.
        return i
    return 0


def _hole_is_legitimate(log_file: Path, line: str, compacted: Callable[[str], bool]) -> bool:
    m = _FOLLOWED.match(line)
    if m is None:
        return False
    previous, following = int(m.group(1)), int(m.group(2))
    if compacted(topic_of(log_file.parent)):
        return following > previous  # the cleaner removes records, never reorders them
    # The tool starts every file at -1: the first record of a segment is its base offset.
    return previous == -1 and following == int(log_file.name.split(".")[0])


def describe(findings: Iterable[Finding], limit: int = 40) -> str:
    items = [str(f) for f in findings]
    more = f"\n  ... and {len(items) - limit} more" if len(items) > limit else ""
    return "\n  ".join(items[:limit]) + more
