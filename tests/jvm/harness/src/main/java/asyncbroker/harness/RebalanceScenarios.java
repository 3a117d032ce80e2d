package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/** Two consumers of one group and the ConsumerRebalanceListener calls each one sees. */
final class RebalanceScenarios {
    private RebalanceScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("rebalance.eager", a -> twoConsumers(a, RangeAssignor.class.getName(), false));
        scenarios.put("rebalance.cooperative", a -> twoConsumers(a, CooperativeStickyAssignor.class.getName(), true));
    }

    /** Records each callback as "revoked [..]", "assigned [..]" or "lost [..]" with partition numbers. */
    static final class Recorder implements ConsumerRebalanceListener {
        final List<String> events = new ArrayList<>();
        private final boolean cooperative;

        Recorder(boolean cooperative) {
            this.cooperative = cooperative;
        }

        private static String parts(Collection<TopicPartition> tps) {
            TreeSet<Integer> ps = new TreeSet<>();
            tps.forEach(tp -> ps.add(tp.partition()));
            return ps.toString();
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            events.add("revoked " + parts(partitions));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            // Cooperative consumers are told of every generation, most with nothing added; how many
            // such generations a member completes depends on whether its SyncGroup beats the other
            // member's rejoin (REBALANCE_IN_PROGRESS otherwise), on Kafka as anywhere: not a fact.
            if (!(cooperative && partitions.isEmpty())) {
                events.add("assigned " + parts(partitions));
            }
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            events.add("lost " + parts(partitions));
        }
    }

    private static void pollUntil(List<KafkaConsumer<byte[], byte[]>> consumers, long timeoutMs, String what,
                                  java.util.function.BooleanSupplier done) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new Check.Failed("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            for (KafkaConsumer<byte[], byte[]> c : consumers) {
                c.poll(Duration.ofMillis(50));  // joins and rebalances progress inside poll
            }
        }
    }

    /**
     * c1 takes all four partitions; c2 joins and they split them; c2 leaves and c1 takes all
     * again. Eager: every rebalance revokes everything first. Cooperative: only what moves.
     */
    static ObjectNode twoConsumers(Args args, String assignor, boolean cooperative) throws Exception {
        String topic = args.name(cooperative ? "coop" : "eager");
        String group = args.name(cooperative ? "coop-group" : "eager-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 4, Map.of());
        }
        Recorder r1 = new Recorder(cooperative);
        Recorder r2 = new Recorder(cooperative);
        List<Integer> generations = new ArrayList<>();
        List<String> e1;
        // Client ids order the member ids ("c1-<uuid>" < "c2-<uuid>"), so the assignment is fixed.
        try (KafkaConsumer<byte[], byte[]> c1 = Clients.consumer(args, group, settings(assignor, "c1"))) {
            c1.subscribe(List.of(topic), r1);
            pollUntil(List.of(c1), 30_000, "c1 to own all four partitions", () -> c1.assignment().size() == 4);
            generations.add(c1.groupMetadata().generationId());
            try (KafkaConsumer<byte[], byte[]> c2 = Clients.consumer(args, group, settings(assignor, "c2"))) {
                c2.subscribe(List.of(topic), r2);
                pollUntil(List.of(c1, c2), 30_000, "c1 and c2 to own two partitions each",
                        () -> c1.assignment().size() == 2 && c2.assignment().size() == 2);
                generations.add(c1.groupMetadata().generationId());
                generations.add(c2.groupMetadata().generationId());
            }
            pollUntil(List.of(c1), 30_000, "c1 to own all four partitions again after c2 left",
                    () -> c1.assignment().size() == 4);
            generations.add(c1.groupMetadata().generationId());
            e1 = List.copyOf(r1.events);  // before close(), which revokes whatever c1 owns
        }
        List<String> e2 = List.copyOf(r2.events);
        Check.that(e1.stream().noneMatch(e -> e.startsWith("lost")), "c1 lost nothing: %s", e1);
        if (cooperative) {
            Check.that(!e1.contains("revoked [0, 1, 2, 3]"), "cooperative: c1 never revokes everything: %s", e1);
            Check.that(e1.stream().anyMatch(e -> e.startsWith("revoked [") && e.length() == "revoked [a, b]".length()),
                    "cooperative: c1 revokes just the two partitions that move: %s", e1);
        } else {
            Check.that(e1.contains("revoked [0, 1, 2, 3]"), "eager: c1 revokes all four when c2 joins: %s", e1);
            Check.equal("assigned [0, 1]", e1.get(e1.indexOf("revoked [0, 1, 2, 3]") + 1),
                    "eager: range gives c1 the first half: " + e1);
            Check.that(e2.contains("assigned [2, 3]"), "eager: range gives c2 the second half: %s", e2);
        }
        ObjectNode facts = Json.object();
        ArrayNode a1 = facts.putArray("c1_events");
        e1.forEach(a1::add);
        ArrayNode a2 = facts.putArray("c2_events");
        e2.forEach(a2::add);
        ArrayNode g = facts.putArray("generations");
        generations.forEach(g::add);
        return facts;
    }

    private static Map<String, Object> settings(String assignor, String clientId) {
        return Map.of(
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor,
                ConsumerConfig.CLIENT_ID_CONFIG, clientId,
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 100,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
    }
}
