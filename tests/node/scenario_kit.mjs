// What the Node.js clients' scenarios share. Both clients speak the KafkaJS API; where they
// differ (how a producer, a consumer and a subscription are made), the scenario passes a
// `client` adapter:
//   client.createTopic(admin, topic, numPartitions)
//   client.idempotentProducer(codec)       a producer that compresses with `codec`
//   client.send(producer, topic, messages, codec)
//   client.consumer(groupId, { commitIntervalMs })  starting from the earliest offset
//   client.subscribe(consumer, topic)
//   client.runOptions                      extra consumer.run options (kafkajs: auto-commit)

export function scenarioArgs() {
  const [scenario, bootstrap, prefix] = process.argv.slice(2);
  return { scenario, bootstrap, prefix };
}

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

function recordOf(partition, message) {
  return {
    partition,
    offset: Number(message.offset),
    key: message.key && message.key.toString(),
    value: message.value && message.value.toString(),
    headers: Object.fromEntries(Object.entries(message.headers || {}).map(([k, v]) => [k, v.toString()])),
  };
}

// Read every record of `topic` from the beginning with a throwaway group, until `count` arrived.
async function readAll(client, prefix, topic, count) {
  const consumer = client.consumer(`${prefix}-reader-${topic}`, {});
  const seen = [];
  await consumer.connect();
  await client.subscribe(consumer, topic);
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      seen.push(recordOf(partition, message));
      if (seen.length >= count) done();
    },
  });
  await withTimeout(finished, 60000, `${count} records of ${topic}`);
  await consumer.disconnect();
  return seen;
}

// An idempotent producer per codec: 3 sends of 50 records (key k<n % 7>, value "<codec>-<n>"
// padded to 200, header n) over 2 partitions, then every record read back.
export async function produceEachCodec(kafka, client, prefix, codecs) {
  const admin = kafka.admin();
  await admin.connect();
  const out = {};
  for (const [name, codec] of Object.entries(codecs)) {
    const topic = `${prefix}-${name}`;
    await client.createTopic(admin, topic, 2);
    const p = client.idempotentProducer(codec);
    await p.connect();
    const acks = [];
    for (let round = 0; round < 3; round++) {
      const messages = [];
      for (let i = 0; i < 50; i++) {
        const n = round * 50 + i;
        messages.push({ key: `k${n % 7}`, value: `${name}-${n}`.padEnd(200, "."), headers: { n: String(n) } });
      }
      const answer = await client.send(p, topic, messages, codec);
      acks.push(...answer.map((r) => ({ partition: r.partition, baseOffset: Number(r.baseOffset), error: r.errorCode })));
    }
    await p.disconnect();
    out[name] = { acks, records: await readAll(client, prefix, topic, 150) };
  }
  await admin.disconnect();
  return out;
}

// Two members of one group share a 4-partition topic of 25 records each, commit as they go,
// and leave. Returns what the scenario reports from, with the admin client still connected
// (the caller disconnects it).
export async function consumerGroup(kafka, client, prefix) {
  const topic = `${prefix}-group`;
  const groupId = `${prefix}-g`;
  const admin = kafka.admin();
  await admin.connect();
  await client.createTopic(admin, topic, 4);
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
    const c = client.consumer(groupId, { commitIntervalMs: 100 });
    await c.connect();
    await client.subscribe(c, topic);
    await c.run({
      ...client.runOptions,
      eachMessage: async ({ partition, message }) => {
        consumed.set(`${partition}:${message.offset}`, m);
        if (consumed.size >= 100) done();
      },
    });
    members.push(c);
  }
  await withTimeout(finished, 60000, "100 records by the group");
  const described = (await admin.describeGroups([groupId])).groups[0];
  for (const c of members) await c.disconnect(); // commits what it consumed as it leaves
  const offsets = await admin.fetchOffsets({ groupId, topics: [topic] });
  const afterLeave = (await admin.describeGroups([groupId])).groups[0];
  return {
    admin,
    groupId,
    consumed,
    described,
    committed: offsets[0].partitions.map((x) => [x.partition, Number(x.offset)]).sort((a, b) => a[0] - b[0]),
    afterLeave,
  };
}

// Run `scenarios[name]` and print its answer as one JSON line (exit 0), or the error (exit 1).
export async function main(scenarios, name) {
  try {
    const result = await scenarios[name]();
    // Exit once the whole answer is written: a pipe takes 64 KiB at a time.
    process.stdout.write(JSON.stringify(result) + "\n", () => process.exit(0));
  } catch (e) {
    process.stderr.write(`${e.stack || e}\n${JSON.stringify(e)}\n`);
    process.exit(1);
  }
}
