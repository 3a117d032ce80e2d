// kafkajs scenarios run by tests/node/test_kafkajs.py against a broker:
//   node kafkajs_scenarios.mjs <scenario> <bootstrap> <topic prefix>
// Each prints one JSON object on stdout: what the client saw, for the test to check.
import kafkajs from "kafkajs";
import SnappyCodec from "kafkajs-snappy";
import LZ4Codec from "kafkajs-lz4";

import { consumerGroup, main, produceEachCodec, scenarioArgs } from "./scenario_kit.mjs";

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = kafkajs;

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;

const { scenario, bootstrap, prefix } = scenarioArgs();
const kafka = new Kafka({
  clientId: "asyncbroker-tests",
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  retry: { retries: 5, initialRetryTime: 100 },
});

const CODECS = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4,
};

const client = {
  createTopic: (admin, topic, numPartitions) =>
    admin.createTopics({ topics: [{ topic, numPartitions }], waitForLeaders: true }),
  idempotentProducer: () => kafka.producer({ idempotent: true, maxInFlightRequests: 1 }),
  send: (producer, topic, messages, codec) => producer.send({ topic, messages, compression: codec, acks: -1 }),
  consumer: (groupId, { commitIntervalMs }) => kafka.consumer(commitIntervalMs === undefined
    ? { groupId, maxWaitTimeInMs: 100 }
    : { groupId, maxWaitTimeInMs: 100, sessionTimeout: 10000, heartbeatInterval: 500 }),
  subscribe: (consumer, topic) => consumer.subscribe({ topic, fromBeginning: true }),
  runOptions: { autoCommitInterval: 100 },
};

async function producer() {
  return produceEachCodec(kafka, client, prefix, CODECS);
}

async function group() {
  // The committed offsets are read back with the admin client.
  const { admin, consumed, described, committed, afterLeave } = await consumerGroup(kafka, client, prefix);
  await admin.disconnect();
  return {
    consumed: consumed.size,
    byMember: [0, 1].map((m) => [...consumed.values()].filter((x) => x === m).length),
    state: described.state,
    protocolType: described.protocolType,
    members: described.members.length,
    committed,
    stateAfterLeave: afterLeave.state,
  };
}

async function adminScenario() {
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${prefix}-admin`;
  const out = {};
  out.created = await admin.createTopics({
    topics: [{ topic, numPartitions: 2, configEntries: [{ name: "cleanup.policy", value: "compact" }] }],
    waitForLeaders: true,
  });
  out.createdAgain = await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
  out.listed = (await admin.listTopics()).includes(topic);
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  out.partitions = meta.topics[0].partitions.map((p) => [p.partitionId, p.leader]).sort();
  await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
  out.partitionsAfterGrow = (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0].partitions.length;

  await admin.alterConfigs({
    validateOnly: false,
    resources: [{ type: 2, name: topic, configEntries: [{ name: "retention.ms", value: "123456" }] }],
  });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: 2, name: topic, configNames: ["retention.ms", "cleanup.policy", "segment.bytes"] }],
  });
  out.configs = Object.fromEntries(
    configs.resources[0].configEntries.map((e) => [e.configName, [e.configValue, e.isDefault]]));

  const p = kafka.producer();
  await p.connect();
  await p.send({ topic, messages: Array.from({ length: 10 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: 0 })) });
  await p.disconnect();
  out.offsets = (await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.low), Number(o.high)]).sort();
  await admin.deleteTopicRecords({ topic, partitions: [{ partition: 0, offset: "4" }] });
  out.offsetsAfterDelete = (await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.low), Number(o.high)]).sort();

  const groupId = `${prefix}-admin-g`;
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: "7" }] });
  out.groupOffsets = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions
    .map((p) => [p.partition, Number(p.offset)]).sort();
  await admin.resetOffsets({ groupId, topic, earliest: true });
  out.groupOffsetsAfterReset = (await admin.fetchOffsets({ groupId, topics: [topic] }))[0].partitions
    .map((p) => [p.partition, Number(p.offset)]).sort();
  out.groupsListed = (await admin.listGroups()).groups.some((g) => g.groupId === groupId);
  out.deletedGroups = (await admin.deleteGroups([groupId])).map((g) => [g.groupId === groupId, g.errorCode]);

  await admin.deleteTopics({ topics: [topic] });
  out.listedAfterDelete = (await admin.listTopics()).includes(topic);
  await admin.disconnect();
  // The admin client's Metadata does not create topics: a missing one is an error (asked
  // without retries, which would only repeat it).
  const once = new Kafka({ clientId: "asyncbroker-tests", brokers: [bootstrap], logLevel: logLevel.NOTHING,
                           retry: { retries: 0 } }).admin();
  await once.connect();
  try {
    await once.fetchTopicMetadata({ topics: [`${prefix}-never-made`] });
    out.missing = "found";
  } catch (e) {
    out.missing = e.type || e.name;
  }
  await once.disconnect();
  return out;
}

await main({ producer, group, admin: adminScenario }, scenario);
