package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.NoOffsetForPartitionException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/** The consumer with assign and subscribe (classic protocol): positions, seeks, commits, restarts. */
final class ConsumerScenarios {
    private ConsumerScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("consumer.positions", ConsumerScenarios::positions);
        scenarios.put("consumer.commits", ConsumerScenarios::commits);
        scenarios.put("consumer.group_restart", ConsumerScenarios::groupRestart);
        scenarios.put("consumer.group_protocol_consumer", ConsumerScenarios::groupProtocolConsumer);
        scenarios.put("consumer.fetch_sessions", ConsumerScenarios::fetchSessions);
    }

    /** Produces `perPartition` records to each partition, record i stamped t0 + i * 1000. */
    static void fill(Args args, String topic, int partitions, int perPartition, long t0) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
            for (int p = 0; p < partitions; p++) {
                for (int i = 0; i < perPartition; i++) {
                    producer.send(new ProducerRecord<>(topic, p, t0 + i * 1000L, ProducerScenarios.utf8("k" + i),
                            ProducerScenarios.utf8("p" + p + "-" + i)));
                }
            }
            producer.flush();
        }
    }

    static List<TopicPartition> partitions(String topic, int n) {
        List<TopicPartition> out = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            out.add(new TopicPartition(topic, p));
        }
        return out;
    }

    /**
     * One consumer over 6 partitions while records arrive in rounds. Its fetch session (KIP-227)
     * sees each change a consumer makes: new positions, paused partitions left out and resumed,
     * partitions dropped by assign() (forgotten), and a seek back. Every record arrives once
     * per position, in order within its partition.
     */
    static ObjectNode fetchSessions(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("sessions");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 6, Map.of());
        }
        List<TopicPartition> tps = partitions(topic, 6);
        List<String> reads = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args);
             KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            int round = 0;
            for (; round < 3; round++) {
                sendRound(producer, topic, 6, round);
                reads.add(describe(Clients.pollFor(consumer, 6, 20_000)));
            }
            consumer.pause(tps.subList(0, 3));
            sendRound(producer, topic, 6, round++);
            reads.add("paused 0-2: " + describe(Clients.pollFor(consumer, 3, 20_000)));
            consumer.resume(tps.subList(0, 3));
            reads.add("resumed: " + describe(Clients.pollFor(consumer, 3, 20_000)));
            consumer.assign(tps.subList(0, 4));
            sendRound(producer, topic, 6, round++);
            reads.add("assigned 0-3: " + describe(Clients.pollFor(consumer, 4, 20_000)));
            consumer.seek(tps.get(0), 1);
            reads.add("p0 from 1: " + describe(Clients.pollFor(consumer, 4, 20_000)));
            Check.equal(5L, consumer.position(tps.get(0)), "position of p0 after reading it again");
            Check.equal(5L, consumer.position(tps.get(3)), "position of p3");
        }
        facts.set("reads", Json.MAPPER.valueToTree(reads));
        return facts;
    }

    private static void sendRound(KafkaProducer<byte[], byte[]> producer, String topic, int partitions, int round)
            throws Exception {
        for (int p = 0; p < partitions; p++) {
            producer.send(new ProducerRecord<>(topic, p, ProducerScenarios.utf8("k"),
                    ProducerScenarios.utf8("p" + p + "-r" + round))).get(20, TimeUnit.SECONDS);
        }
    }

    /** The records as "partition@offset=value", sorted (fetches of several partitions may interleave). */
    private static String describe(List<ConsumerRecord<byte[], byte[]>> records) {
        List<String> out = new ArrayList<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            out.add(r.partition() + "@" + r.offset() + "=" + ProducerScenarios.text(r.value()));
        }
        out.sort(null);
        return String.join(" ", out);
    }

    /** assign: beginning/end offsets, seeks, position, offsetsForTimes, pause/resume, lag. */
    static ObjectNode positions(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("positions");
        long t0 = args.baseTimestamp();
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        fill(args, topic, 2, 10, t0);
        List<TopicPartition> tps = partitions(topic, 2);
        TopicPartition tp0 = tps.get(0);
        TopicPartition tp1 = tps.get(1);
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
            consumer.assign(tps);
            Check.equal(Map.of(tp0, 0L, tp1, 0L), consumer.beginningOffsets(tps), "beginningOffsets");
            Check.equal(Map.of(tp0, 10L, tp1, 10L), consumer.endOffsets(tps), "endOffsets");
            consumer.seekToBeginning(tps);
            Check.equal(0L, consumer.position(tp0), "position after seekToBeginning");
            Clients.pollFor(consumer, 20, 20_000);
            Check.equal(10L, consumer.position(tp0), "position of p0 after reading all");
            Check.equal(10L, consumer.position(tp1), "position of p1 after reading all");
            Check.equal(0L, consumer.currentLag(tp0).orElse(-1), "lag of p0 after reading all");

            consumer.seek(tp0, 5);
            Check.equal(5L, consumer.position(tp0), "position after seek(5)");
            List<ConsumerRecord<byte[], byte[]>> again = Clients.pollFor(consumer, 5, 20_000);
            Check.equal(5L, again.get(0).offset(), "first offset read after seek(5)");
            Check.equal("p0-5", ProducerScenarios.text(again.get(0).value()), "first value read after seek(5)");

            consumer.seekToEnd(List.of(tp1));
            Check.equal(10L, consumer.position(tp1), "position after seekToEnd");

            Map<TopicPartition, Long> query = new HashMap<>();
            query.put(tp0, t0 + 3_500);
            query.put(tp1, t0 + 1_000_000);
            Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(query);
            Check.equal(4L, found.get(tp0).offset(), "offsetsForTimes: first record at or after t0+3500");
            Check.equal(t0 + 4_000, found.get(tp0).timestamp(), "offsetsForTimes: its timestamp");
            Check.equal(0, found.get(tp0).leaderEpoch().orElse(-1), "offsetsForTimes: its leader epoch");
            Check.that(found.get(tp1) == null, "offsetsForTimes past the last record is null, was %s", found.get(tp1));
            Map<TopicPartition, OffsetAndTimestamp> first = consumer.offsetsForTimes(Map.of(tp0, t0 - 1));
            Check.equal(0L, first.get(tp0).offset(), "offsetsForTimes before the first record");

            // pause(p1): while p0's ten records arrive, p1 yields nothing and its position stays.
            consumer.seekToBeginning(tps);
            consumer.pause(List.of(tp1));
            Check.equal(Set.of(tp1), consumer.paused(), "paused()");
            List<ConsumerRecord<byte[], byte[]>> whilePaused = Clients.pollFor(consumer, 10, 20_000);
            for (ConsumerRecord<byte[], byte[]> r : whilePaused) {
                Check.equal(0, r.partition(), "partition of a record polled while p1 is paused");
            }
            Check.equal(0L, consumer.position(tp1), "position of the paused partition");
            consumer.resume(List.of(tp1));
            Check.equal(Set.of(), consumer.paused(), "paused() after resume");
            List<ConsumerRecord<byte[], byte[]>> resumed = Clients.pollFor(consumer, 10, 20_000);
            Check.equal(1, resumed.get(0).partition(), "records after resume come from p1");
            Check.equal(0L, resumed.get(0).offset(), "and start at its position");
            facts.put("offsets_for_times_p0", found.get(tp0).offset());
        }
        return facts;
    }

    /** commitSync (explicit and positions), commitAsync with a callback, committed(). */
    static ObjectNode commits(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("commits");
        String group = args.name("commits-group");
        long t0 = args.baseTimestamp();
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        fill(args, topic, 2, 10, t0);
        List<TopicPartition> tps = partitions(topic, 2);
        TopicPartition tp0 = tps.get(0);
        TopicPartition tp1 = tps.get(1);
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args, group, Map.of())) {
            consumer.assign(tps);
            Map<TopicPartition, OffsetAndMetadata> none = consumer.committed(Set.copyOf(tps));
            Check.that(none.get(tp0) == null && none.get(tp1) == null, "nothing committed yet: %s", none);

            consumer.commitSync(Map.of(tp0, new OffsetAndMetadata(3, "meta-3")));
            Map<TopicPartition, OffsetAndMetadata> c = consumer.committed(Set.copyOf(tps));
            Check.equal(3L, c.get(tp0).offset(), "committed offset");
            Check.equal("meta-3", c.get(tp0).metadata(), "committed metadata");
            Check.that(c.get(tp1) == null, "p1 still uncommitted: %s", c.get(tp1));
            facts.put("explicit_leader_epoch", String.valueOf(c.get(tp0).leaderEpoch()));

            AtomicReference<Object> done = new AtomicReference<>();
            consumer.commitAsync(Map.of(tp1, new OffsetAndMetadata(7, "async")), (offsets, error) ->
                    done.set(error == null ? offsets : error));
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (done.get() == null && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(20));  // commitAsync callbacks run inside poll
            }
            Check.that(done.get() instanceof Map, "commitAsync callback: %s", done.get());
            Check.equal(7L, consumer.committed(Set.of(tp1)).get(tp1).offset(), "offset committed asynchronously");

            // Read everything, then commit the positions: the commit carries the records' epoch.
            consumer.seekToBeginning(tps);
            Clients.pollFor(consumer, 20, 20_000);
            consumer.commitSync();
            c = consumer.committed(Set.copyOf(tps));
            Check.equal(10L, c.get(tp0).offset(), "committed position of p0");
            Check.equal(10L, c.get(tp1).offset(), "committed position of p1");
            Check.equal("", c.get(tp0).metadata(), "metadata of a position commit");
            facts.put("position_leader_epoch", String.valueOf(c.get(tp0).leaderEpoch()));
        }
        return facts;
    }

    /** A subscribed group stops, and its next member starts from the committed offsets. */
    static ObjectNode groupRestart(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("restart");
        String group = args.name("restart-group");
        long t0 = args.baseTimestamp();
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        fill(args, topic, 2, 10, t0);
        List<TopicPartition> tps = partitions(topic, 2);
        TopicPartition tp0 = tps.get(0);
        TopicPartition tp1 = tps.get(1);
        Map<String, Object> fast = Map.of(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200);
        try (KafkaConsumer<byte[], byte[]> first = Clients.consumer(args, group, fast)) {
            first.subscribe(List.of(topic));
            Clients.pollFor(first, 20, 30_000);
            first.commitSync(Map.of(tp0, new OffsetAndMetadata(4), tp1, new OffsetAndMetadata(6)));
            facts.put("first_generation", first.groupMetadata().generationId());
        }
        Map<TopicPartition, Long> firstOffsets = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> second = Clients.consumer(args, group, fast)) {
            second.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(second, 10, 30_000);
            for (ConsumerRecord<byte[], byte[]> r : got) {
                firstOffsets.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
            }
            Check.equal(Map.of(tp0, 4L, tp1, 6L), firstOffsets, "the restarted group's first offsets");
            second.commitSync();
            Check.equal(10L, second.committed(Set.of(tp0)).get(tp0).offset(), "committed after the restart");
            facts.put("second_generation", second.groupMetadata().generationId());
        }
        // auto.offset.reset applies only where nothing is committed.
        String fresh = args.name("restart-fresh");
        try (KafkaConsumer<byte[], byte[]> latest = Clients.consumer(args, fresh,
                Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "latest"))) {
            latest.assign(tps);
            Check.equal(10L, latest.position(tp0), "auto.offset.reset=latest without a commit");
        }
        try (KafkaConsumer<byte[], byte[]> strict = Clients.consumer(args, fresh,
                Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"))) {
            strict.assign(tps);
            ObjectNode noReset = Check.fails(NoOffsetForPartitionException.class,
                    "auto.offset.reset=none without a commit", () -> strict.position(tp0));
            // The client's own message lists the partitions in HashSet order: only the class is a fact.
            noReset.remove("message");
            facts.set("reset_none", noReset);
        }
        // enable.auto.commit commits the consumed positions when the consumer closes.
        String auto = args.name("restart-auto");
        try (KafkaConsumer<byte[], byte[]> c = Clients.consumer(args, auto,
                Map.of(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, true, ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200))) {
            c.subscribe(List.of(topic));
            Clients.pollFor(c, 20, 30_000);
        }
        try (KafkaConsumer<byte[], byte[]> c = Clients.consumer(args, auto, Map.of())) {
            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(new HashSet<>(tps));
            Check.equal(10L, committed.get(tp0).offset(), "auto-committed on close (p0)");
            Check.equal(10L, committed.get(tp1).offset(), "auto-committed on close (p1)");
        }
        return facts;
    }

    /**
     * group.protocol=consumer (KIP-848): records what the client gets within a bounded time,
     * assignment or error; the Python side says which outcome each broker must give.
     */
    static ObjectNode groupProtocolConsumer(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("kip848");
        String group = args.name("kip848-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
        }
        fill(args, topic, 2, 3, args.baseTimestamp());
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args, group, config)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + 15_000_000_000L;
            int records = 0;
            try {
                while (records < 6 && System.nanoTime() < deadline) {
                    ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(100));
                    records += got.count();
                }
                facts.put("outcome", records == 6 ? "consumed" : "timed out");
                facts.put("records", records);
                facts.put("assignment", consumer.assignment().size());
            } catch (Exception e) {
                facts.put("outcome", "error");
                facts.put("error", e.getClass().getSimpleName());
                facts.put("message", e.getMessage());
            }
        }
        return facts;
    }
}
