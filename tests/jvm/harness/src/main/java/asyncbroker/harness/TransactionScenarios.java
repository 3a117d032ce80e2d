package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The transactional producer (issue 14): commit and abort, consume-transform-produce, fencing. */
final class TransactionScenarios {
    private TransactionScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("txn.commit_and_abort", TransactionScenarios::commitAndAbort);
        scenarios.put("txn.consume_transform_produce", TransactionScenarios::consumeTransformProduce);
        scenarios.put("txn.fencing", TransactionScenarios::fencing);
    }

    static KafkaProducer<byte[], byte[]> transactional(Args args, String id) {
        return Clients.producer(args, Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args.name(id)));
    }

    static KafkaConsumer<byte[], byte[]> reader(Args args, String group, String isolation) {
        return Clients.consumer(args, group == null ? null : args.name(group),
                Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation));
    }

    /** Everything a consumer of this isolation level reads from the partitions: values per partition. */
    static ObjectNode readAll(Args args, String topic, int partitions, String isolation) {
        ObjectNode out = Json.object();
        try (KafkaConsumer<byte[], byte[]> consumer = reader(args, null, isolation)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                tps.add(new TopicPartition(topic, p));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            Map<Integer, List<String>> values = new TreeMap<>();
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (true) {
                boolean done = true;
                for (TopicPartition tp : tps) {
                    done &= consumer.position(tp) >= end.get(tp);
                }
                if (done) {
                    break;
                }
                Check.that(System.nanoTime() < deadline, "reading %s up to %s", topic, end);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    values.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(ProducerScenarios.text(r.value()));
                }
            }
            for (Map.Entry<Integer, List<String>> e : values.entrySet()) {
                ArrayNode a = out.putArray(Integer.toString(e.getKey()));
                e.getValue().forEach(a::add);
            }
        }
        return out;
    }

    /** Three transactions over two partitions: committed, aborted, committed. */
    static ObjectNode commitAndAbort(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("txn-out");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        try (KafkaProducer<byte[], byte[]> producer = transactional(args, "tx")) {
            producer.initTransactions();
            for (int n = 0; n < 3; n++) {
                producer.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>(topic, i % 2, args.baseTimestamp() + i, null,
                            ProducerScenarios.utf8("t" + n + "-" + i)));
                }
                if (n == 1) {
                    producer.flush();
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        facts.set("read_committed", readAll(args, topic, 2, "read_committed"));
        facts.set("read_uncommitted", readAll(args, topic, 2, "read_uncommitted"));
        return facts;
    }

    /** Read 20 records, write each transformed in a transaction with the input offsets. */
    static ObjectNode consumeTransformProduce(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String in = args.name("ctp-in");
        String out = args.name("ctp-out");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, in, 2, Map.of());
            Clients.createTopic(admin, out, 2, Map.of());
        }
        try (KafkaProducer<byte[], byte[]> plain = Clients.producer(args)) {
            for (int i = 0; i < 20; i++) {
                plain.send(new ProducerRecord<>(in, i % 2, args.baseTimestamp() + i, null,
                        ProducerScenarios.utf8("in-" + i)));
            }
            plain.flush();
        }
        int processed = 0;
        int transactions = 0;
        try (KafkaProducer<byte[], byte[]> producer = transactional(args, "ctp");
             KafkaConsumer<byte[], byte[]> consumer = reader(args, "ctp-group", "read_committed")) {
            producer.initTransactions();
            consumer.subscribe(List.of(in));
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (processed < 20) {
                Check.that(System.nanoTime() < deadline, "processing 20 records, %d done", processed);
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) {
                    continue;
                }
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    producer.send(new ProducerRecord<>(out, r.partition(), r.timestamp(), null,
                            ProducerScenarios.utf8(ProducerScenarios.text(r.value()).toUpperCase())));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    processed++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
                transactions++;
            }
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(
                    java.util.Set.of(new TopicPartition(in, 0), new TopicPartition(in, 1)));
            ObjectNode c = facts.putObject("committed");
            new TreeMap<>(Map.of("0", committed.get(new TopicPartition(in, 0)).offset(),
                    "1", committed.get(new TopicPartition(in, 1)).offset())).forEach(c::put);
        }
        Check.that(transactions >= 1, "at least one transaction");
        facts.put("processed", processed);
        facts.set("output", readAll(args, out, 2, "read_committed"));
        return facts;
    }

    /** A second producer with the same transactional id fences the first. */
    static ObjectNode fencing(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("fenced");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
        }
        try (KafkaProducer<byte[], byte[]> zombie = transactional(args, "same");
             KafkaProducer<byte[], byte[]> successor = transactional(args, "same")) {
            zombie.initTransactions();
            zombie.beginTransaction();
            zombie.send(new ProducerRecord<>(topic, 0, args.baseTimestamp(), null, ProducerScenarios.utf8("zombie")))
                    .get();
            successor.initTransactions();
            successor.beginTransaction();
            successor.send(new ProducerRecord<>(topic, 0, args.baseTimestamp(), null,
                    ProducerScenarios.utf8("successor")));
            successor.commitTransaction();
            try {
                zombie.commitTransaction();
                facts.put("zombie_commit", "succeeded");
            } catch (KafkaException e) {
                facts.put("zombie_commit", e.getClass().getSimpleName());
            }
        }
        facts.set("read_committed", readAll(args, topic, 1, "read_committed"));
        return facts;
    }
}
