package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/** The producer as users run it: acks=all with idempotence, each codec, headers, nulls, sizes. */
final class ProducerScenarios {
    static final List<String> CODECS = List.of("none", "gzip", "snappy", "lz4", "zstd");
    /** Kafka's default message.max.bytes (and so a topic's max.message.bytes). */
    static final int MAX_MESSAGE_BYTES = 1_048_588;
    /**
     * A one-record batch without key or headers is value + 72 bytes when the value's
     * length takes a 3-byte varint: 61 bytes of batch header, and the record's length (3),
     * attributes, timestamp delta, offset delta, key length (1 each), value length (3) and
     * header count (1).
     */
    static final int ONE_RECORD_BATCH_OVERHEAD = 72;

    private ProducerScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("produce.codecs", ProducerScenarios::codecs);
        scenarios.put("produce.headers_and_nulls", ProducerScenarios::headersAndNulls);
        scenarios.put("produce.large_records", ProducerScenarios::largeRecords);
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    /** Per codec: 60 keyed records with headers over two partitions, produced then read back. */
    static ObjectNode codecs(Args args) throws Exception {
        ObjectNode facts = Json.object();
        long t0 = args.baseTimestamp();
        int n = 60;
        try (Admin admin = Clients.admin(args)) {
            for (String codec : CODECS) {
                Clients.createTopic(admin, args.name("codec-" + codec), 2, Map.of());
            }
            for (String codec : CODECS) {
                String topic = args.name("codec-" + codec);
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args, Map.of(
                        ProducerConfig.COMPRESSION_TYPE_CONFIG, codec, ProducerConfig.LINGER_MS_CONFIG, 20))) {
                    for (int i = 0; i < n; i++) {
                        RecordHeaders headers = new RecordHeaders();
                        headers.add("i", utf8(Integer.toString(i)));
                        headers.add("dup", utf8("first"));
                        headers.add("dup", utf8("second"));
                        String value = ("value " + i + " of " + codec + " ").repeat(1 + i % 7);
                        sent.add(producer.send(new ProducerRecord<>(topic, i % 2, t0 + i, utf8("key-" + i),
                                utf8(value), headers)));
                    }
                    producer.flush();
                }
                long[] next = new long[2];
                for (int i = 0; i < n; i++) {
                    RecordMetadata md = sent.get(i).get(Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
                    Check.equal(i % 2, md.partition(), codec + " record " + i + " partition");
                    Check.equal(next[i % 2]++, md.offset(), codec + " record " + i + " offset (contiguous per partition)");
                    Check.equal(t0 + i, md.timestamp(), codec + " record " + i + " timestamp (CreateTime)");
                }
                List<ConsumerRecord<byte[], byte[]>> got;
                try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
                    List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
                    consumer.assign(tps);
                    consumer.seekToBeginning(tps);
                    got = Clients.pollFor(consumer, n, 20_000);
                    Check.equal(n, got.size(), codec + ": records read back");
                }
                for (ConsumerRecord<byte[], byte[]> r : got) {
                    int i = Integer.parseInt(text(r.key()).substring(4));
                    Check.equal(i % 2, r.partition(), codec + " key-" + i + " partition");
                    Check.equal((long) i / 2, r.offset(), codec + " key-" + i + " offset");
                    Check.equal(t0 + i, r.timestamp(), codec + " key-" + i + " timestamp");
                    Check.equal("CreateTime", r.timestampType().name, codec + " key-" + i + " timestamp type");
                    Check.equal(("value " + i + " of " + codec + " ").repeat(1 + i % 7), text(r.value()),
                            codec + " key-" + i + " value");
                    List<String> headers = new ArrayList<>();
                    for (Header h : r.headers()) {
                        headers.add(h.key() + "=" + text(h.value()));
                    }
                    Check.equal(List.of("i=" + i, "dup=first", "dup=second"), headers, codec + " key-" + i + " headers");
                    Check.equal(0, r.leaderEpoch().orElse(-1), codec + " key-" + i + " leader epoch");
                }
                ObjectNode f = facts.putObject(codec);
                f.put("records", got.size());
                f.put("end_offsets", next[0] + "," + next[1]);
            }
        }
        return facts;
    }

    /** Null and empty keys and values, header edge cases, and a compacted topic's key rule. */
    static ObjectNode headersAndNulls(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("nulls");
        String compacted = args.name("nulls-compacted");
        byte[] allBytes = new byte[256];
        for (int i = 0; i < 256; i++) {
            allBytes[i] = (byte) i;
        }
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        records.add(new ProducerRecord<>(topic, 0, (Long) null, null, utf8("null key")));
        records.add(new ProducerRecord<>(topic, 0, (Long) null, utf8("null value"), (byte[]) null));
        records.add(new ProducerRecord<>(topic, 0, (Long) null, (byte[]) null, (byte[]) null));
        records.add(new ProducerRecord<>(topic, 0, null, new byte[0], new byte[0]));
        RecordHeaders headers = new RecordHeaders();
        headers.add(new RecordHeader("nullable", (byte[]) null));
        headers.add(new RecordHeader("nullable", utf8("then set")));
        headers.add(new RecordHeader("", utf8("empty key")));
        headers.add(new RecordHeader("ключ-ü", utf8("значение")));
        headers.add(new RecordHeader("empty", new byte[0]));
        records.add(new ProducerRecord<>(topic, 0, null, utf8("headers"), allBytes, headers));
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            Clients.createTopic(admin, compacted, 1, Map.of("cleanup.policy", "compact"));
        }
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
            for (ProducerRecord<byte[], byte[]> r : records) {
                producer.send(r).get(Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            }
        }
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(consumer, records.size(), 20_000);
            for (int i = 0; i < records.size(); i++) {
                ProducerRecord<byte[], byte[]> want = records.get(i);
                ConsumerRecord<byte[], byte[]> r = got.get(i);
                Check.equal(i, (int) r.offset(), "offset of record " + i);
                Check.that(Arrays.equals(want.key(), r.key()), "record %d key: %s != %s", i,
                        Arrays.toString(want.key()), Arrays.toString(r.key()));
                Check.that(Arrays.equals(want.value(), r.value()), "record %d value", i);
                Check.equal(want.key() == null ? -1 : want.key().length, r.serializedKeySize(), "record " + i + " key size");
                Check.equal(want.value() == null ? -1 : want.value().length, r.serializedValueSize(),
                        "record " + i + " value size");
                Header[] a = want.headers().toArray();
                Header[] b = r.headers().toArray();
                Check.equal(a.length, b.length, "record " + i + " header count");
                for (int h = 0; h < a.length; h++) {
                    Check.equal(a[h].key(), b[h].key(), "record " + i + " header " + h + " key");
                    Check.that(Arrays.equals(a[h].value(), b[h].value()), "record %d header %d value", i, h);
                }
            }
            facts.put("records", got.size());
        }
        // A compacted topic refuses a record without a key; the idempotent producer then goes on
        // (its next batch restarts the partition's sequence under a bumped epoch).
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
            facts.set("compacted_null_key", Check.fails(InvalidRecordException.class, "keyless record on a compacted topic",
                    () -> producer.send(new ProducerRecord<>(compacted, 0, null, utf8("no key"))).get(
                            Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS)));
            RecordMetadata tombstone = producer.send(new ProducerRecord<>(compacted, 0, utf8("k"), null)).get(
                    Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            RecordMetadata after = producer.send(new ProducerRecord<>(compacted, 0, utf8("k"), utf8("v"))).get(
                    Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            Check.equal(0L, tombstone.offset(), "the tombstone's offset (the keyless record took none)");
            Check.equal(1L, after.offset(), "offset after the tombstone");
        }
        return facts;
    }

    /** Records at max.message.bytes, one byte over it, over max.request.size, and read back. */
    static ObjectNode largeRecords(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("large");
        String small = args.name("large-10k");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            Clients.createTopic(admin, small, 1, Map.of("max.message.bytes", "10000"));
        }
        int atLimit = MAX_MESSAGE_BYTES - ONE_RECORD_BATCH_OVERHEAD;
        int smallAtLimit = 10_000 - ONE_RECORD_BATCH_OVERHEAD;
        ArrayNode outcomes = facts.putArray("outcomes");
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args, Map.of(
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 4 * 1024 * 1024,
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "none"))) {
            RecordMetadata md = producer.send(new ProducerRecord<>(topic, 0, null, filled(atLimit, 'a'))).get(
                    Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            Check.equal(0L, md.offset(), "the record at max.message.bytes is accepted");
            Check.equal(atLimit, md.serializedValueSize(), "its value size");
            ObjectNode over = Check.fails(RecordTooLargeException.class, "a record one byte over max.message.bytes",
                    () -> producer.send(new ProducerRecord<>(topic, 0, null, filled(atLimit + 1, 'b'))).get(
                            Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS));
            outcomes.add(over);
            md = producer.send(new ProducerRecord<>(topic, 0, null, utf8("small after"))).get(
                    Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            Check.equal(1L, md.offset(), "the producer goes on after RecordTooLarge; the refused record took no offset");

            md = producer.send(new ProducerRecord<>(small, 0, null, filled(smallAtLimit, 'c'))).get(
                    Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
            Check.equal(0L, md.offset(), "a record at the topic's max.message.bytes=10000");
            outcomes.add(Check.fails(RecordTooLargeException.class, "one byte over the topic's max.message.bytes",
                    () -> producer.send(new ProducerRecord<>(small, 0, null, filled(smallAtLimit + 1, 'd'))).get(
                            Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS)));
        }
        // max.request.size is the producer's own limit: refused before anything is sent.
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
            outcomes.add(Check.fails(RecordTooLargeException.class, "a record over max.request.size",
                    () -> producer.send(new ProducerRecord<>(topic, 0, null, filled(1_100_000, 'e'))).get(
                            Clients.FUTURE_TIMEOUT_S, TimeUnit.SECONDS)));
        }
        // The consumer's default max.partition.fetch.bytes (1 MiB) is smaller than the batch:
        // the first batch is returned whole anyway.
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(consumer, 2, 20_000);
            Check.that(Arrays.equals(filled(atLimit, 'a'), got.get(0).value()), "the large record reads back whole");
            Check.equal("small after", text(got.get(1).value()), "the record after it");
            facts.put("read_back", got.size());
        }
        return facts;
    }

    static byte[] filled(int size, char c) {
        byte[] b = new byte[size];
        Arrays.fill(b, (byte) c);
        return b;
    }
}
