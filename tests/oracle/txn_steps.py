"""Steps of the transaction scenarios: the coordinator APIs (InitProducerId with a
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit,
DescribeTransactions, ListTransactions) and what a transaction leaves in a partition.

Producer ids are shown by their order of appearance (the two brokers allocate them
differently), and so are the ids inside fetched batches and aborted-transaction lists. A
marker batch is stamped with the broker's clock, so fetched batches are recorded as what
a consumer can rely on: offsets, producer, epoch, flags, records, the marker's type.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import group_steps as gs
from differential import UNORDERED, ScenarioRun, batch, entity
from steps import fetch, list_offsets, produce
from wire.records import decode_records, parse_control_record, read_batch_header

ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 24, 25, 26, 28
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66
LOADING = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def pid(run: ScenarioRun, producer_id: int) -> Any:
    return gs.producer_id_name(run, producer_id)


def symbol(run: ScenarioRun, name: str) -> str:
    """A transactional id or topic as the scenario named it (without the run's suffix)."""
    return name[: -len(run.suffix)] if name.endswith(run.suffix) else name


def wait_for_coordinator(run: ScenarioRun) -> None:
    """Kafka creates and loads __transaction_state on the first lookup: wait until an
    InitProducerId for a throwaway id is answered, unrecorded."""
    gs.wait_for_coordinator(run, key_type=1)

    def settled() -> bool:
        r = gs.init_producer_id(run, transactional_id=run.group("warm-up"), record=False)
        return r.error_code.value not in LOADING

    run.wait_until(settled, "the transaction coordinator")


def init(run: ScenarioRun, txn: str, *, version: int = 5, timeout_ms: int = 60_000, producer_id: int = -1,
         producer_epoch: int = -1, label: str | None = None) -> Any:
    return gs.init_producer_id(run, version=version, transactional_id=run.group(txn), timeout_ms=timeout_ms,
                               producer_id=producer_id, producer_epoch=producer_epoch, label=label)


def add_partitions(run: ScenarioRun, txn: str, producer_id: int, epoch: int, partitions: dict[str, list[int]], *,
                   version: int = 3, verify_only: bool = False, label: str | None = None) -> Any:
    if version < 4:
        topics = tuple(entity(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnTopic", name=run.topic(s),
                              partitions=tuple(ps)) for s, ps in partitions.items())
        return run.call(ADD_PARTITIONS_TO_TXN, version, _label=label, v3_and_below_transactional_id=run.group(txn),
                        v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
                        v3_and_below_topics=topics)
    topics = tuple(entity(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnTopic", name=run.topic(s),
                          partitions=tuple(ps)) for s, ps in partitions.items())
    txn_entity = entity(ADD_PARTITIONS_TO_TXN, version, "AddPartitionsToTxnTransaction",
                        transactional_id=run.group(txn), producer_id=producer_id, producer_epoch=epoch,
                        verify_only=verify_only, topics=topics)
    return run.call(ADD_PARTITIONS_TO_TXN, version, _label=label, transactions=(txn_entity,))


def add_offsets(run: ScenarioRun, txn: str, producer_id: int, epoch: int, group: str, *, version: int = 3) -> Any:
    return run.call(ADD_OFFSETS_TO_TXN, version, transactional_id=run.group(txn), producer_id=producer_id,
                    producer_epoch=epoch, group_id=run.group(group))


def end_txn(run: ScenarioRun, txn: str, producer_id: int, epoch: int, commit: bool, *, version: int = 5,
            label: str | None = None) -> Any:
    r = run.call(END_TXN, version, _record=False, transactional_id=run.group(txn), producer_id=producer_id,
                 producer_epoch=epoch, committed=commit)
    shown = dataclasses.replace(r, producer_id=pid(run, r.producer_id)) if hasattr(r, "producer_id") else r
    run.note(label or f"EndTxnResponse v{version} {'commit' if commit else 'abort'}", shown)
    return r


def txn_offset_commit(run: ScenarioRun, txn: str, producer_id: int, epoch: int, group: str,
                      offsets: dict[str, dict[int, int]], *, version: int = 3, generation_id: int = -1,
                      member_id: str = "") -> Any:
    topics = tuple(entity(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitRequestTopic", name=run.topic(s), partitions=tuple(
        entity(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitRequestPartition", partition_index=p, committed_offset=o,
               committed_leader_epoch=-1, committed_metadata="") for p, o in parts.items()))
        for s, parts in offsets.items())
    return run.call(TXN_OFFSET_COMMIT, version, transactional_id=run.group(txn), group_id=run.group(group),
                    producer_id=producer_id, producer_epoch=epoch, generation_id=generation_id, member_id=member_id,
                    group_instance_id=None, topics=topics)


def describe(run: ScenarioRun, txns: list[str], *, record: bool = True) -> list[dict[str, Any]]:
    """DescribeTransactions, recorded without the start time's value (each broker's clock)."""
    r = run.call(DESCRIBE_TRANSACTIONS, 0, _record=False,
                 transactional_ids=tuple(run.group(t) if t else t for t in txns))
    states = [{
        "error_code": s.error_code.value, "transactional_id": symbol(run, s.transactional_id),
        "state": s.transaction_state,
        "producer_id": pid(run, s.producer_id) if s.error_code.value == 0 else s.producer_id,
        "producer_epoch": s.producer_epoch, "timeout": s.transaction_timeout,
        "start_time_set": s.transaction_start_time.timestamp() > 0,
        "topics": sorted((symbol(run, t.topic), sorted(t.partitions)) for t in s.topics),
    } for s in r.transaction_states]
    if record:
        run.note("DescribeTransactions", states)
    return states


def wait_for_state(run: ScenarioRun, txn: str, state: str) -> None:
    run.wait_until(lambda: describe(run, [txn], record=False)[0]["state"] == state, f"{txn} in {state}")


def list_transactions(run: ScenarioRun, *, states: tuple[str, ...] = (), producer_ids: tuple[int, ...] = (),
                      version: int = 1, duration_ms: int = -1, pattern: str | None = None) -> None:
    r = run.call(LIST_TRANSACTIONS, version, _record=False, state_filters=states, producer_id_filters=producer_ids,
                 duration_filter=duration_ms, transactional_id_pattern=pattern)
    mine = sorted((symbol(run, t.transactional_id), pid(run, t.producer_id), t.transaction_state)
                  for t in r.transaction_states if t.transactional_id.endswith(run.suffix))
    run.note(f"ListTransactions v{version}", {"error_code": r.error_code.value,
                                               "unknown_state_filters": list(r.unknown_state_filters),
                                               "transactions": mine})


def txn_batch(producer_id: int, epoch: int, sequence: int, records: list[tuple[bytes, bytes]]) -> bytes:
    return batch(records, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, transactional=True)


def send(run: ScenarioRun, symbol: str, partition: int, txn: str | None, data: bytes, *, version: int = 11,
         label: str | None = None) -> Any:
    return produce(run, symbol, {partition: data}, version=version, transactional_id=run.group(txn) if txn else None,
                   label=label)


def read(run: ScenarioRun, symbol: str, partition: int, *, committed: bool, offset: int = 0,
         label: str | None = None) -> None:
    """Fetch as a consumer of that isolation level sees it, recorded as it may rely on it."""
    r = fetch(run, symbol, {partition: offset}, isolation_level=1 if committed else 0, record=False)
    run.note(label or f"Fetch {'read_committed' if committed else 'read_uncommitted'} {symbol}-{partition}",
             partition_view(run, r.responses[0].partitions[0]))


def partition_view(run: ScenarioRun, p: Any) -> dict[str, Any]:
    """A Fetch answer's partition with its producer ids masked and its batches decoded (a
    marker's timestamp is the broker's clock: left out)."""
    return {
        "partition_index": p.partition_index,
        "error_code": p.error_code.value, "high_watermark": p.high_watermark,
        "last_stable_offset": p.last_stable_offset, "log_start_offset": p.log_start_offset,
        "aborted_transactions": None if p.aborted_transactions is None else sorted(
            (pid(run, a.producer_id), a.first_offset) for a in p.aborted_transactions),
        "batches": _batches(run, bytes(p.records or b"")),
    }


def _batches(run: ScenarioRun, data: bytes) -> list[dict[str, Any]]:
    out = []
    pos = 0
    while pos + 61 <= len(data):
        h = read_batch_header(data, pos)
        end = pos + 12 + h.batch_length
        if end > len(data):
            break
        records = decode_records(data, pos)
        view: dict[str, Any] = {"base_offset": h.base_offset, "last_offset_delta": h.last_offset_delta,
                                "transactional": h.is_transactional, "control": h.is_control,
                                "producer_id": pid(run, h.producer_id), "producer_epoch": h.producer_epoch,
                                "base_sequence": h.base_sequence}
        if h.is_control:
            # A cleaned marker of a producer still active is kept empty (its producer state).
            marker = parse_control_record(records[0].key, records[0].value) if records else None
            view["marker"] = None if marker is None else (int(marker.type), marker.coordinator_epoch)
        else:
            view["records"] = [(r.offset, r.key, r.value) for r in records]
        out.append(view)
        pos = end
    return out


def lso(run: ScenarioRun, symbol: str, partition: int, *, label: str | None = None) -> None:
    """ListOffsets latest under read_committed: the last stable offset."""
    list_offsets(run, symbol, [(partition, -1)], isolation_level=1, label=label)


# -- answers whose collections Kafka builds from hash maps --------------------------------


def _sort_topic_results(topics: list[dict[str, Any]]) -> None:
    topics.sort(key=lambda t: t["name"])
    for t in topics:
        t["results_by_partition"].sort(key=lambda p: p["partition_index"])


def _sort_add_partitions(answer: dict[str, Any]) -> None:
    """Kafka answers a transaction's partitions from a map of partition errors."""
    if "results_by_topic_v3_and_below" in answer:
        _sort_topic_results(answer["results_by_topic_v3_and_below"])
    for txn in answer.get("results_by_transaction") or []:
        _sort_topic_results(txn["topic_results"])


def _sort_txn_offset_commit(answer: dict[str, Any]) -> None:
    """TxnOffsetCommit's answer merges the refused topics and the coordinator's (maps)."""
    answer["topics"].sort(key=lambda t: t["name"])
    for t in answer["topics"]:
        t["partitions"].sort(key=lambda p: p["partition_index"])


UNORDERED.update({ADD_PARTITIONS_TO_TXN: _sort_add_partitions, TXN_OFFSET_COMMIT: _sort_txn_offset_commit})
