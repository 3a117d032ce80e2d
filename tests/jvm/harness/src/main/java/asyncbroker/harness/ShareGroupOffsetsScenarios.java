package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * The share group offset admin APIs (KIP-932) through kafka-clients' Admin:
 * alterShareGroupOffsets, listShareGroupOffsets and deleteShareGroupOffsets, and where a
 * KafkaShareConsumer of the group starts reading after each.
 */
final class ShareGroupOffsetsScenarios {
    private static final long DEADLINE_MS = 60_000;

    private ShareGroupOffsetsScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("share.offsets_admin", ShareGroupOffsetsScenarios::offsetsAdmin);
    }

    private static KafkaShareConsumer<byte[], byte[]> member(Args args, String group) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "harness-share-offsets");
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** "partition:offset" of each record delivered until `count` distinct ones came (or the deadline). */
    private static Set<String> consume(Args args, String group, String topic, int count) {
        Set<String> seen = new TreeSet<>();
        try (KafkaShareConsumer<byte[], byte[]> c = member(args, group)) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + DEADLINE_MS * 1_000_000L;
            while (seen.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    seen.add(r.partition() + ":" + r.offset());
                }
            }
            c.commitSync();
        }
        return seen;
    }

    /** partition -> "start=<offset> lag=<lag>" (or only the lag, `lagOnly`). */
    private static ObjectNode offsets(Admin admin, String group, boolean lagOnly) throws Exception {
        Map<TopicPartition, SharePartitionOffsetInfo> found = admin
            .listShareGroupOffsets(Map.of(group, new ListShareGroupOffsetsSpec()))
            .partitionsToOffsetInfo(group).get(30, TimeUnit.SECONDS);
        Map<String, String> sorted = new TreeMap<>();
        found.forEach((tp, info) -> sorted.put(String.valueOf(tp.partition()),
            (lagOnly ? "" : "start=" + info.startOffset() + " ") + "lag=" + info.lag().map(String::valueOf).orElse("none")));
        ObjectNode node = Json.object();
        sorted.forEach(node::put);
        return node;
    }

    private static String outcome(org.apache.kafka.common.KafkaFuture<Void> future) throws Exception {
        try {
            future.get(30, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        }
    }

    static ObjectNode offsetsAdmin(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("share-offsets");
        String group = args.name("share-offsets-group");
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
            ShareConsumerScenarios.fromEarliest(admin, group);
            ConsumerScenarios.fill(args, topic, 2, 5, args.baseTimestamp());
            facts.put("alter", outcome(admin.alterShareGroupOffsets(group, Map.of(p0, 2L, p1, 0L)).all()));
            facts.set("after_alter", offsets(admin, group, false));
            facts.put("alter_unknown_partition", outcome(admin.alterShareGroupOffsets(
                group, Map.of(new TopicPartition(topic, 7), 1L)).partitionResult(new TopicPartition(topic, 7))));
            facts.put("consumed_after_alter", String.join(",", consume(args, group, topic, 8)));
            facts.set("lag_after_consuming", offsets(admin, group, true));
            try (KafkaShareConsumer<byte[], byte[]> c = member(args, group)) {
                c.subscribe(List.of(topic));
                long deadline = System.nanoTime() + DEADLINE_MS * 1_000_000L;
                String withMember = "no member seen";
                while (System.nanoTime() < deadline) {
                    c.poll(Duration.ofMillis(100));
                    withMember = outcome(admin.alterShareGroupOffsets(group, Map.of(p0, 0L)).all());
                    if (!withMember.equals("ok")) {
                        break;
                    }
                }
                facts.put("alter_with_a_member", withMember);
                facts.put("delete_with_a_member", outcome(admin.deleteShareGroupOffsets(group, Set.of(topic)).all()));
            }
            facts.put("delete", outcome(admin.deleteShareGroupOffsets(group, Set.of(topic)).all()));
            facts.set("after_delete", offsets(admin, group, false));
            facts.put("delete_again", outcome(admin.deleteShareGroupOffsets(group, Set.of(topic)).topicResult(topic)));
            facts.put("consumed_after_delete", consume(args, group, topic, 10).size());
            facts.put("alter_unknown_group_topic", outcome(admin.alterShareGroupOffsets(
                args.name("never"), Map.of(new TopicPartition(args.name("nope"), 0), 1L)).all()));
        }
        return facts;
    }
}
