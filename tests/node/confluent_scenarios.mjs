// @confluentinc/kafka-javascript scenarios (its KafkaJS-compatible API, over librdkafka) run by
// tests/node/test_confluent_kafka_javascript.py against a broker:
//   node confluent_scenarios.mjs <scenario> <bootstrap> <topic prefix>
// Each prints one JSON object on stdout: what the client saw, for the test to check.
import { KafkaJS } from "@confluentinc/kafka-javascript";

const { Kafka, CompressionTypes, logLevel } = KafkaJS;
const [scenario, bootstrap, prefix] = process.argv.slice(2);
const kafka = new Kafka({ kafkaJS: { brokers: [bootstrap], logLevel: logLevel.ERROR } });

const CODECS = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.SNAPPY,
  lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
};

async function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function readAll(topic, count) {
  const consumer = kafka.consumer({ kafkaJS: { groupId: `${prefix}-reader-${topic}`, fromBeginning: true } });
  const seen = [];
  await consumer.connect();
  await consumer.subscribe({ topics: [topic] });
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      seen.push({
        partition,
        offset: Number(message.offset),
        key: message.key && message.key.toString(),
        value: message.value && message.value.toString(),
        headers: Object.fromEntries(Object.entries(message.headers || {}).map(([k, v]) => [k, v.toString()])),
      });
      if (seen.length >= count) done();
    },
  });
  await withTimeout(finished, 60000, `${count} records of ${topic}`);
  await consumer.disconnect();
  return seen;
}

async function producer() {
  const admin = kafka.admin();
  await admin.connect();
  const out = {};
  for (const [name, codec] of Object.entries(CODECS)) {
    const topic = `${prefix}-${name}`;
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const p = kafka.producer({ kafkaJS: { idempotent: true, compression: codec } });
    await p.connect();
    const acks = [];
    for (let round = 0; round < 3; round++) {
      const messages = [];
      for (let i = 0; i < 50; i++) {
        const n = round * 50 + i;
        messages.push({ key: `k${n % 7}`, value: `${name}-${n}`.padEnd(200, "."), headers: { n: String(n) } });
      }
      const answer = await p.send({ topic, messages });
      acks.push(...answer.map((r) => ({ partition: r.partition, baseOffset: Number(r.baseOffset), error: r.errorCode })));
    }
    await p.disconnect();
    out[name] = { acks, records: await readAll(topic, 150) };
  }
  await admin.disconnect();
  return out;
}

async function group() {
  const topic = `${prefix}-group`;
  const groupId = `${prefix}-g`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }] });
  const p = kafka.producer();
  await p.connect();
  for (let partition = 0; partition < 4; partition++) {
    const messages = [];
    for (let i = 0; i < 25; i++) messages.push({ key: `p${partition}-${i}`, value: `v${i}`, partition });
    await p.send({ topic, messages });
  }
  await p.disconnect();

  const consumed = new Map();
  const members = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  for (let m = 0; m < 2; m++) {
    const c = kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, autoCommit: true, autoCommitInterval: 100 } });
    await c.connect();
    await c.subscribe({ topics: [topic] });
    await c.run({
      eachMessage: async ({ partition, message }) => {
        consumed.set(`${partition}:${message.offset}`, m);
        if (consumed.size >= 100) done();
      },
    });
    members.push(c);
  }
  await withTimeout(finished, 60000, "100 records by the group");
  const described = await admin.describeGroups([groupId]);
  for (const c of members) await c.disconnect(); // commits what it consumed as it leaves
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  const afterLeave = await admin.describeGroups([groupId]);
  const listed = (await admin.listGroups()).groups.some((g) => g.groupId === groupId);
  const deleted = await admin.deleteGroups([groupId]);
  await admin.disconnect();
  return {
    consumed: consumed.size,
    protocolType: described.groups[0].protocolType,
    members: described.groups[0].members.length,
    committed: offsets[0].partitions.map((x) => [x.partition, Number(x.offset)]).sort((a, b) => a[0] - b[0]),
    stateAfterLeave: afterLeave.groups[0].state,
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
  try {
    await admin.deleteTopicRecords({ topic: compacted, partitions: [{ partition: 0, offset: "-1" }] });
    out.compactedDelete = "deleted";
  } catch (e) {
    out.compactedDelete = (e.partitions || []).map((x) => x.error.type);
  }
  await admin.deleteTopics({ topics: [topic, compacted] });
  out.listedAfterDelete = (await admin.listTopics()).includes(topic);
  await admin.disconnect();
  return out;
}

const scenarios = { producer, group, admin: adminScenario };
try {
  const result = await scenarios[scenario]();
  // Exit once the whole answer is written: a pipe takes 64 KiB at a time.
  process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
} catch (e) {
  process.stderr.write(`${e.stack || e}\n${JSON.stringify(e)}\n`);
  process.exit(1);
}
