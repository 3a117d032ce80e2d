package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.BooleanSupplier;

/**
 * KafkaConsumer with group.protocol=consumer (KIP-848): the broker assigns. Members join and
 * leave, a broker-side regex (SubscriptionPattern, RE2J syntax) picks up a topic created
 * later, a static member rejoins without moving partitions, and a new member resumes from
 * the group's commits. The facts say what the client saw, never which partition went where:
 * the uniform assignor's choice among equal splits is the broker's own.
 */
final class ConsumerProtocolScenarios {
    /** Long enough for a member to see a new group epoch on its next heartbeat (5 s) twice. */
    private static final long REBALANCE_MS = 40_000;

    private ConsumerProtocolScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("kip848.join_leave", ConsumerProtocolScenarios::joinLeave);
        scenarios.put("kip848.regex", ConsumerProtocolScenarios::regex);
        scenarios.put("kip848.static_rejoin", ConsumerProtocolScenarios::staticRejoin);
        scenarios.put("kip848.commit_resume", ConsumerProtocolScenarios::commitResume);
        scenarios.put("kip848.mixed_group", ConsumerProtocolScenarios::mixedGroup);
    }

    private static KafkaConsumer<byte[], byte[]> member(Args args, String group, String instanceId) {
        return member(args, group, instanceId, "consumer");
    }

    private static KafkaConsumer<byte[], byte[]> member(Args args, String group, String instanceId, String protocol) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        if (instanceId != null) {
            config.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
        }
        return Clients.consumer(args, group, config);
    }

    /** Polls every consumer in turn until `condition` holds. */
    @SafeVarargs
    private static void pollUntil(String what, BooleanSupplier condition, KafkaConsumer<byte[], byte[]>... consumers)
            throws InterruptedException {
        Check.eventually(REBALANCE_MS, what, () -> {
            for (KafkaConsumer<byte[], byte[]> c : consumers) {
                c.poll(Duration.ofMillis(50));
            }
            return condition.getAsBoolean();
        });
    }

    private static boolean disjointHalves(Set<TopicPartition> a, Set<TopicPartition> b, int partitions) {
        Set<TopicPartition> both = new HashSet<>(a);
        both.addAll(b);
        return a.size() == partitions / 2 && b.size() == partitions / 2 && both.size() == partitions;
    }

    /** A member alone holds every partition, shares them with a second, and takes them back. */
    static ObjectNode joinLeave(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("kip848-jl");
        String group = args.name("kip848-jl-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 4, Map.of());
        }
        try (KafkaConsumer<byte[], byte[]> a = member(args, group, null)) {
            a.subscribe(List.of(topic));
            pollUntil("the first member to hold all 4 partitions", () -> a.assignment().size() == 4, a);
            facts.put("alone", a.assignment().size());
            try (KafkaConsumer<byte[], byte[]> b = member(args, group, null)) {
                b.subscribe(List.of(topic));
                pollUntil("two members with 2 partitions each",
                        () -> disjointHalves(a.assignment(), b.assignment(), 4), a, b);
                facts.put("shared", a.assignment().size() + "+" + b.assignment().size());
            }
            pollUntil("the remaining member to take every partition back", () -> a.assignment().size() == 4, a);
            facts.put("after_leave", a.assignment().size());
        }
        return facts;
    }

    /**
     * subscribe(SubscriptionPattern): the broker resolves the regex, and a topic created after
     * the subscription is assigned and read. A regex RE2J refuses (a look-ahead) fails the poll.
     */
    static ObjectNode regex(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String prefix = args.name("kip848-rx");
        String group = args.name("kip848-rx-group");
        try (Admin admin = Clients.admin(args);
             KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
            Clients.createTopic(admin, prefix + "-first", 1, Map.of());
            producer.send(new ProducerRecord<>(prefix + "-first", ProducerScenarios.utf8("one"))).get();
            try (KafkaConsumer<byte[], byte[]> c = member(args, group, null)) {
                c.subscribe(new SubscriptionPattern(prefix + "-.*"));
                Set<String> seen = new TreeSet<>();
                pollRecords(c, seen, 1);
                facts.put("before", seen.size());
                Clients.createTopic(admin, prefix + "-later", 2, Map.of());
                producer.send(new ProducerRecord<>(prefix + "-later", 0, null, ProducerScenarios.utf8("two"))).get();
                pollRecords(c, seen, 2);
                facts.put("after", seen.size());
                facts.put("assigned_partitions", c.assignment().size());
            }
            facts.set("lookahead", pollError(args, group + "-bad", "(?=x)" + prefix));
            facts.set("unbalanced", pollError(args, group + "-bad2", prefix + "-("));
        }
        return facts;
    }

    private static void pollRecords(KafkaConsumer<byte[], byte[]> c, Set<String> values, int count)
            throws InterruptedException {
        Check.eventually(REBALANCE_MS, count + " records through the regex subscription", () -> {
            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                values.add(new String(r.value(), java.nio.charset.StandardCharsets.UTF_8));
            }
            return values.size() >= count;
        });
    }

    /** The error a poll raises for a subscription to `pattern`: its class and Kafka's message. */
    private static ObjectNode pollError(Args args, String group, String pattern) throws Exception {
        ObjectNode out = Json.object();
        try (KafkaConsumer<byte[], byte[]> c = member(args, group, null)) {
            c.subscribe(new SubscriptionPattern(pattern));
            long deadline = System.nanoTime() + REBALANCE_MS * 1_000_000L;
            while (System.nanoTime() < deadline) {
                try {
                    c.poll(Duration.ofMillis(100));
                } catch (Exception e) {
                    out.put("error", e.getClass().getSimpleName());
                    return out;
                }
            }
            out.put("error", "none within the deadline");
        }
        return out;
    }

    /**
     * Two static members (group.instance.id) split a topic; one closes and a new consumer with
     * its instance id takes exactly its partitions back, while the other never loses any.
     */
    static ObjectNode staticRejoin(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("kip848-static");
        String group = args.name("kip848-static-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 4, Map.of());
        }
        try (KafkaConsumer<byte[], byte[]> a = member(args, group, "instance-a")) {
            a.subscribe(List.of(topic));
            Set<TopicPartition> before;
            try (KafkaConsumer<byte[], byte[]> b = member(args, group, "instance-b")) {
                b.subscribe(List.of(topic));
                pollUntil("two static members with 2 partitions each",
                        () -> disjointHalves(a.assignment(), b.assignment(), 4), a, b);
                before = new HashSet<>(b.assignment());
            }
            Set<TopicPartition> aHeld = new HashSet<>(a.assignment());
            try (KafkaConsumer<byte[], byte[]> b2 = member(args, group, "instance-b")) {
                b2.subscribe(List.of(topic));
                pollUntil("the rejoined static member to hold its partitions",
                        () -> b2.assignment().size() == 2, a, b2);
                facts.put("rejoined_with_same_partitions", b2.assignment().equals(before));
                facts.put("other_member_kept_its_partitions", a.assignment().equals(aHeld));
            }
        }
        return facts;
    }

    /**
     * A group migrating between protocols: a classic consumer alone, a consumer-protocol one
     * joins (the broker converts the group) and they share the topic, the consumer-protocol
     * one leaves (converted back) and the classic one takes everything; then the other way
     * round, a classic consumer joining a consumer-protocol group.
     */
    static ObjectNode mixedGroup(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("kip848-mixed");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 4, Map.of());
        }
        String[][] orders = {{"classic", "consumer"}, {"consumer", "classic"}};
        for (String[] order : orders) {
            String group = args.name("kip848-mixed-" + order[0] + "-first");
            ObjectNode phase = facts.putObject(order[0] + " first");
            try (KafkaConsumer<byte[], byte[]> first = member(args, group, null, order[0])) {
                first.subscribe(List.of(topic));
                pollUntil("the first member to hold all 4 partitions", () -> first.assignment().size() == 4, first);
                try (KafkaConsumer<byte[], byte[]> second = member(args, group, null, order[1])) {
                    second.subscribe(List.of(topic));
                    pollUntil("a " + order[0] + " and a " + order[1] + " member with 2 partitions each",
                            () -> disjointHalves(first.assignment(), second.assignment(), 4), first, second);
                    phase.put("shared", first.assignment().size() + "+" + second.assignment().size());
                }
                pollUntil("the first member to take every partition back", () -> first.assignment().size() == 4, first);
                phase.put("after_leave", first.assignment().size());
            }
        }
        return facts;
    }

    /** A member commits part way; the next member of the group starts from that commit. */
    static ObjectNode commitResume(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("kip848-commit");
        String group = args.name("kip848-commit-group");
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of());
        }
        ConsumerScenarios.fill(args, topic, 1, 6, args.baseTimestamp());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = member(args, group, null)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(c, 6, REBALANCE_MS);
            facts.put("first_read", got.size());
            c.commitSync(Map.of(tp, new OffsetAndMetadata(4, "half-way")));
            OffsetAndMetadata committed = c.committed(Set.of(tp)).get(tp);
            facts.put("committed", committed.offset());
            facts.put("metadata", committed.metadata());
        }
        try (KafkaConsumer<byte[], byte[]> c = member(args, group, null)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(c, 2, REBALANCE_MS);
            facts.put("resumed_at", got.get(0).offset());
            facts.put("position", c.position(tp));
        }
        return facts;
    }
}
