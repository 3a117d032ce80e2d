"""PySpark over Kafka log directories (the `[spark]` extra).

- `kafka_log_source`: the `kafka-log` batch data source (one Spark partition per
  segment, split at offset-index entries), built on `log_dir_scan` (read-only
  listing of partitions, live segments and checkpoints) and `segment_reader`
  (storage's FileRecords + wire's record decoder -> Arrow); tiered topics'
  remote segments through `remote_tier` (the log dir's `__remote_log_metadata`
  replayed with storage's RemoteLogMetadataCache, read from the remote tier).
- `compaction_audit` + `cleaner_position` + `audit_report`: the compaction audit
  and its JSON / text / HTML renderings.
- `parquet_export`: records -> Parquet partitioned by topic and partition.
- `session.build_session`: a SparkSession with `kafka-log` registered and Spark's
  own Kafka connector on its classpath (`format("kafka")` against a running
  broker: batch and streaming, source and sink).
- `cli.audit_main` / `cli.export_main`: `asyncbroker audit` / `asyncbroker export`.

Imports flow pipeline -> storage -> wire only. Nothing here is imported by
the broker, and importing `pipeline` itself does not import pyspark.
"""
