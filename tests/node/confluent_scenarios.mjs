// @confluentinc/kafka-javascript scenarios (its KafkaJS-compatible API, over librdkafka) run by
// tests/node/test_confluent_kafka_javascript.py against a broker:
//   node confluent_scenarios.mjs <scenario> <bootstrap> <topic prefix>
// Each prints one JSON object on stdout: what the client saw, for the test to check.
import { KafkaJS } from "@confluentinc/kafka-javascript";

import { consumerGroup, main, produceEachCodec, scenarioArgs } from "./scenario_kit.mjs";

const { Kafka, CompressionTypes, logLevel } = KafkaJS;
const { scenario, bootstrap, prefix } = scenarioArgs();
const kafka = new Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: logLevel.ERROR } });

const CODECS = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.SNAPPY,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
};

const client = {
  createTopic: (admin, topic, numPartitions) => admin.createTopics({ topics: [{ topic, numPartitions }] }),
  idempotentProducer: (codec) => kafka.producer({ kafkaJS: { idempotent: true, compression: codec } }),
  send: (producer, topic, messages) => producer.send({ topic, messages }),
  consumer: (groupId, { commitIntervalMs }) => kafka.consumer({ kafkaJS: commitIntervalMs === undefined
    ? { groupId, fromBeginning: true }
    : { groupId, fromBeginning: true, autoCommit: true, autoCommitInterval: commitIntervalMs } }),
  subscribe: (consumer, topic) => consumer.subscribe({ topics: [topic] }),
  runOptions: {},
};

async function producer() {
  return produceEachCodec(kafka, client, prefix, CODECS);
}

async function group() {
  const { admin, groupId, consumed, described, committed, afterLeave } = await consumerGroup(kafka, client, prefix);
  const listed = (await admin.listGroups()).groups.some((g) => g.groupId === groupId);
  const deleted = await admin.deleteGroups([groupId]);
  await admin.disconnect();
  return {
    consumed: consumed.size,
    protocolType: described.protocolType,
    members: described.members.length,
    committed,
    stateAfterLeave: afterLeave.state,
    listed,
    deleted: deleted.map((g) => [g.groupId === groupId, g.errorCode]),
  };
}

async function adminScenario() {
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${prefix}-admin`;
  const out = {};
  out.created = await admin.createTopics({
    topics: [{ topic, numPartitions: 2, configEntries: [{ name: "retention.ms", value: "86400000" }] }],
  });
  out.listed = (await admin.listTopics()).includes(topic);
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = meta[0].partitions.map((x) => [x.partitionId, x.leader]).sort();
  const p = kafka.producer();
  await p.connect();
  const now = Date.now();
  await p.send({ topic, messages: Array.from({ length: 10 }, (_, i) => (
    { key: `k${i}`, value: `v${i}`, partition: 0, timestamp: String(now + i * 1000) })) });
  await p.disconnect();
  const offsets = (o) => o.map((x) => [x.partition, Number(x.low), Number(x.high)]).sort();
  out.offsets = offsets(await admin.fetchTopicOffsets(topic));
  out.byTimestamp = (await admin.fetchTopicOffsetsByTimestamp(topic, now + 4500))
    .map((x) => [x.partition, Number(x.offset)]).sort();
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "4" }] });
  out.offsetsAfterDelete = offsets(await admin.fetchTopicOffsets(topic));
  // A compacted-only topic keeps its records: DeleteRecords is refused by policy.
  const compacted = `${prefix}-compacted`;
  await admin.createTopics({ topics: [{ topic: compacted, configEntries: [{ name: "cleanup.policy", value: "compact" }] }] });
  // Kafka answers CreateTopics before its replica manager has the new partition, so DeleteRecords
  // may first get a retriable NOT_LEADER_FOR_PARTITION; the Java admin client retries those, and
  // so does this scenario (bounded), keeping the first answer that is not retriable.
  const retriable = new Set(["ERR_NOT_LEADER_FOR_PARTITION", "ERR_UNKNOWN_TOPIC_OR_PART", "ERR_LEADER_NOT_AVAILABLE"]);
  const deadline = Date.now() + 15000;
  for (;;) {
    try {
      await admin.deleteTopicRecords({ topic: compacted, partitions: [{ partition: 0, offset: "-1" }] });
      out.compactedDelete = "deleted";
    } catch (e) {
      out.compactedDelete = (e.partitions || []).map((x) => x.error.type);
    }
    const again = Array.isArray(out.compactedDelete) && out.compactedDelete.some((t) => retriable.has(t));
    if (!again || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await admin.deleteTopics({ topics: [topic, compacted] });
  out.listedAfterDelete = (await admin.listTopics()).includes(topic);
  await admin.disconnect();
  return out;
}

await main({ producer, group, admin: adminScenario }, scenario);
