package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * KafkaShareConsumer (KIP-932): two members of one share group share one partition, and each
 * record is delivered once when accepted; a record released explicitly comes back with its
 * delivery count raised.
 */
final class ShareConsumerScenarios {
    private static final long DEADLINE_MS = 60_000;

    private ShareConsumerScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("share.pair", ShareConsumerScenarios::pair);
        scenarios.put("share.release", ShareConsumerScenarios::release);
    }

    private static KafkaShareConsumer<byte[], byte[]> member(Args args, String group, String mode) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "harness-share-consumer");
        p.put("share.acknowledgement.mode", mode);
        return new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
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
}
