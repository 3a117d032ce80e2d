// kafkajs scenarios run by tests/node/test_kafkajs.py against a broker:
//   node kafkajs_scenarios.mjs <scenario> <bootstrap> <topic prefix>
// Each prints one JSON object on stdout: what the client saw, for the test to check.
import kafkajs from "kafkajs";
import SnappyCodec from "kafkajs-snappy";
import LZ4Codec from "kafkajs-lz4";

const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = kafkajs;

CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;

const [scenario, bootstrap, prefix] = process.argv.slice(2);
const kafka = new Kafka({
  clientId: "asyncbroker-tests",
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  retry: { retries: 5, initialRetryTime: 100 },
});

const CODECS = {
  none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy, lz4: CompressionTypes.LZ4,
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

// Read every record of `topic` from the beginning with a throwaway group, until `count` arrived.
async function readAll(topic, count) {
  const consumer = kafka.consumer({ groupId: `${prefix}-reader-${topic}`, maxWaitTimeInMs: 100 });
  const seen = [];
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
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
  // An idempotent producer per codec, each batch with keys and headers.
  const admin = kafka.admin();
  await admin.connect();
  const out = {};
  for (const [name, codec] of Object.entries(CODECS)) {
    const topic = `${prefix}-${name}`;
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const p = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    const acks = [];
    for (let round = 0; round < 3; round++) {
      const messages = [];
      for (let i = 0; i < 50; i++) {
        const n = round * 50 + i;
        messages.push({ key: `k${n % 7}`, value: `${name}-${n}`.padEnd(200, "."), headers: { n: String(n) } });
      }
      const answer = await p.send({ topic, messages, compression: codec, acks: -1 });
      acks.push(...answer.map((r) => ({ partition: r.partition, baseOffset: Number(r.baseOffset), error: r.errorCode })));
    }
    await p.disconnect();
    const records = await readAll(topic, 150);
    out[name] = { acks, records };
  }
  await admin.disconnect();
  return out;
}

async function group() {
  // Two members of one group share a 4-partition topic, commit as they go, and leave; the
  // committed offsets are read back with the admin client.
  const topic = `${prefix}-group`;
  const groupId = `${prefix}-g`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 4 }], waitForLeaders: true });
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
    const c = kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 10000, heartbeatInterval: 500 });
    await c.connect();
    await c.subscribe({ topic, fromBeginning: true });
    await c.run({
      autoCommitInterval: 100,
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
  await admin.disconnect();
  return {
    consumed: consumed.size,
    byMember: [0, 1].map((m) => [...consumed.values()].filter((x) => x === m).length),
    state: described.groups[0].state,
    protocolType: described.groups[0].protocolType,
    members: described.groups[0].members.length,
    committed: offsets[0].partitions.map((p) => [p.partition, Number(p.offset)]).sort((a, b) => a[0] - b[0]),
    stateAfterLeave: afterLeave.groups[0].state,
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

const scenarios = { producer, group, admin: adminScenario };
try {
  const result = await scenarios[scenario]();
  // Exit once the whole answer is written: a pipe takes 64 KiB at a time.
  process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
} catch (e) {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
}
