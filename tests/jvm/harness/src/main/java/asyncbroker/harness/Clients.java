package asyncbroker.harness;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/** Clients as a user configures them, and the set-up steps scenarios share. */
final class Clients {
    /** Every client call of a scenario is bounded by this (admin calls, blocking consumer calls). */
    static final int API_TIMEOUT_MS = 30_000;
    static final long FUTURE_TIMEOUT_S = 40;

    private Clients() {
    }

    static Admin admin(Args args) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
        p.put(AdminClientConfig.CLIENT_ID_CONFIG, "harness-admin");
        return Admin.create(p);
    }

    /** acks=all and idempotence on, as the issue asks (they are also 4.x's defaults). */
    static KafkaProducer<byte[], byte[]> producer(Args args, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, API_TIMEOUT_MS);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "harness-producer");
        p.putAll(extra);
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    static KafkaProducer<byte[], byte[]> producer(Args args) {
        return producer(args, Map.of());
    }

    /** A consumer; group.protocol=classic unless `extra` says otherwise, auto commit off. */
    static KafkaConsumer<byte[], byte[]> consumer(Args args, String group, Map<String, Object> extra) {
        Map<String, Object> p = new HashMap<>();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args.bootstrap());
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
        }
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, API_TIMEOUT_MS);
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "harness-consumer");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static KafkaConsumer<byte[], byte[]> consumer(Args args) {
        return consumer(args, null, Map.of());
    }

    /** Creates a topic and waits until a ListOffsets for each partition is answered by its leader. */
    static void createTopic(Admin admin, String name, int partitions, Map<String, String> configs) throws Exception {
        NewTopic topic = new NewTopic(name, partitions, (short) 1).configs(configs);
        admin.createTopics(List.of(topic)).all().get(FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
        awaitPartitions(admin, name, partitions);
    }

    static void awaitPartitions(Admin admin, String name, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            specs.put(new TopicPartition(name, p), OffsetSpec.latest());
        }
        Check.eventually(API_TIMEOUT_MS, "the partitions of " + name + " to be served", () -> {
            try {
                admin.listOffsets(specs).all().get(FUTURE_TIMEOUT_S, TimeUnit.SECONDS);
                return true;
            } catch (Exception e) {
                return false;
            }
        });
    }

    /** Polls until `count` records arrived (or the deadline passes) and returns them in order. */
    static List<ConsumerRecord<byte[], byte[]>> pollFor(KafkaConsumer<byte[], byte[]> consumer, int count,
                                                         long timeoutMs) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (out.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new Check.Failed("timed out after " + timeoutMs + " ms with " + out.size() + " of " + count
                        + " records");
            }
            ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
            records.forEach(out::add);
        }
        return out;
    }
}
