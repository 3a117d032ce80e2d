package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * KafkaShareConsumer (KIP-932): two members of one share group share one partition, and each
 * record is delivered once when accepted; a record released explicitly comes back with its
 * delivery count raised; share.acquire.mode=record_limit splits a batch to max.poll.records;
 * a record held past its lock with acknowledge(record, RENEW) is never handed to the other
 * member and is accepted at the end (share.version 2).
 */
final class ShareConsumerScenarios {
    private static final long DEADLINE_MS = 60_000;

    private ShareConsumerScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("share.pair", ShareConsumerScenarios::pair);
        scenarios.put("share.release", ShareConsumerScenarios::release);
        scenarios.put("share.record_limit", ShareConsumerScenarios::recordLimit);
        scenarios.put("share.renew", ShareConsumerScenarios::renew);
    }

    private static KafkaShareConsumer<byte[], byte[]> member(Args args, String group, String mode) {
        return member(args, group, mode, Map.of());
    }

    private static KafkaShareConsumer<byte[], byte[]> member(Args args, String group, String mode,
                                                             Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "harness-share-consumer");
        p.put("share.acknowledgement.mode", mode);
        p.putAll(extra);
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** `count` records in one batch (the producer lingers until flushed). */
    private static void oneBatch(Args args, String topic, int count) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args, Map.of(ProducerConfig.LINGER_MS_CONFIG, 5_000))) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, args.baseTimestamp() + i, ProducerScenarios.utf8("k" + i),
                        ProducerScenarios.utf8("v" + i)));
            }
            producer.flush();
        }
    }

    private static void setGroupConfig(Admin admin, String group, String key, String value) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry(key, value), AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
    }

    /** The group reads from the earliest offset (a share group starts at the latest by default). */
    static void fromEarliest(Admin admin, String group) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET))))
            .all().get(30, TimeUnit.SECONDS);
    }

    static ObjectNode pair(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("share-pair");
        String group = args.name("share-pair-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            fromEarliest(admin, group);
        }
        ConsumerScenarios.fill(args, topic, 1, 20, args.baseTimestamp());
        Map<String, Integer> deliveries = new TreeMap<>();
        try (KafkaShareConsumer<byte[], byte[]> a = member(args, group, "implicit");
             KafkaShareConsumer<byte[], byte[]> b = member(args, group, "implicit")) {
            a.subscribe(List.of(topic));
            b.subscribe(List.of(topic));
            long deadline = System.nanoTime() + DEADLINE_MS * 1_000_000L;
            while (deliveries.size() < 20 && System.nanoTime() < deadline) {
                for (KafkaShareConsumer<byte[], byte[]> c : List.of(a, b)) {
                    for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                        deliveries.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
                    }
                }
            }
            a.commitSync();
            b.commitSync();
        }
        facts.put("distinct", deliveries.size());
        facts.put("each_once", deliveries.values().stream().allMatch(n -> n == 1));
        return facts;
    }

    static ObjectNode release(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("share-release");
        String group = args.name("share-release-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            fromEarliest(admin, group);
        }
        ConsumerScenarios.fill(args, topic, 1, 1, args.baseTimestamp());
        try (KafkaShareConsumer<byte[], byte[]> c = member(args, group, "explicit")) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + DEADLINE_MS * 1_000_000L;
            int round = 0;
            while (round < 2 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    facts.put("delivery_" + (round + 1), r.deliveryCount().map(Short::intValue).orElse(-1));
                    c.acknowledge(r, round == 0 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT);
                    round++;
                }
                c.commitSync();
            }
        }
        return facts;
    }

    /**
     * share.acquire.mode=record_limit, max.poll.records=3: a batch of ten records comes as
     * polls of 3, 3, 3 and 1 (batch_optimized would hand the whole batch to the first poll).
     */
    static ObjectNode recordLimit(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("share-record-limit");
        String group = args.name("share-record-limit-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            fromEarliest(admin, group);
        }
        oneBatch(args, topic, 10);
        List<Integer> sizes = new ArrayList<>();
        List<String> offsets = new ArrayList<>();
        try (KafkaShareConsumer<byte[], byte[]> c = member(args, group, "implicit",
                Map.of("share.acquire.mode", "record_limit", ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 3))) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + DEADLINE_MS * 1_000_000L;
            int seen = 0;
            while (seen < 10 && System.nanoTime() < deadline) {
                var records = c.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    continue;
                }
                sizes.add(records.count());
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    offsets.add(r.offset() + "@" + r.deliveryCount().map(Short::intValue).orElse(-1));
                    seen++;
                }
            }
            c.commitSync();
        }
        facts.put("poll_sizes", sizes.toString());
        facts.put("offsets", offsets.toString());
        return facts;
    }

    /**
     * The group's record lock is 15 s (the least Kafka allows). Member a polls one record and
     * keeps renewing it (acknowledge(record, RENEW)) for 20 s, member b polling all the while,
     * then a accepts it: b is never handed the record, and a's acceptance succeeds.
     */
    static ObjectNode renew(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("share-renew");
        String group = args.name("share-renew-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
            fromEarliest(admin, group);
            // 3 s (the oracle's group.share.min.record.lock.duration.ms is 1 s): held for 4.5 s
            setGroupConfig(admin, group, "share.record.lock.duration.ms", "3000");
        }
        ConsumerScenarios.fill(args, topic, 1, 1, args.baseTimestamp());
        long holdMs = 4_500;
        int handedToB = 0;
        int renewals = 0;
        List<Integer> deliveryCounts = new ArrayList<>();
        Map<TopicIdPartition, Optional<KafkaException>> accepted = Map.of();
        try (KafkaShareConsumer<byte[], byte[]> a = member(args, group, "explicit");
             KafkaShareConsumer<byte[], byte[]> b = member(args, group, "explicit")) {
            a.subscribe(List.of(topic));
            long deadline = System.nanoTime() + (DEADLINE_MS + holdMs) * 1_000_000L;
            long firstSeen = -1;
            boolean done = false;
            while (!done && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : a.poll(Duration.ofMillis(200))) {
                    long now = System.nanoTime();
                    if (firstSeen < 0) {
                        firstSeen = now;
                        b.subscribe(List.of(topic)); // b joins once a holds the record
                    }
                    deliveryCounts.add(r.deliveryCount().map(Short::intValue).orElse(-1));
                    if (now - firstSeen < holdMs * 1_000_000L) {
                        a.acknowledge(r, AcknowledgeType.RENEW);
                        renewals++;
                    } else {
                        a.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted = a.commitSync();
                        done = true;
                    }
                }
                if (firstSeen >= 0) {
                    for (ConsumerRecord<byte[], byte[]> r : b.poll(Duration.ofMillis(200))) {
                        handedToB++;
                        b.acknowledge(r, AcknowledgeType.RELEASE);
                    }
                }
                if (!done && firstSeen >= 0) {
                    Thread.sleep(300);
                }
            }
            Check.that(done, "a never accepted its record");
        }
        facts.put("handed_to_b", handedToB);
        facts.put("renewed_more_than_once", renewals > 1);
        facts.put("delivery_counts", deliveryCounts.stream().distinct().toList().toString());
        facts.put("accepted_without_error", !accepted.isEmpty()
                && accepted.values().stream().allMatch(Optional::isEmpty));
        return facts;
    }
}
