package asyncbroker.streams;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * A Kafka Streams application with processing.guarantee=exactly_once_v2: reads `input`,
 * upper-cases each value, counts values per key in a state store (a changelog topic) and
 * writes both to `output` and `counts`. Exits once `expected` records were read back from
 * `output` with read_committed, printing one line of facts:
 * "output=<sorted values>|counts=<key:count,...>|state=<final state>".
 *
 * Arguments: bootstrap application-id input output counts expected
 */
public final class ExactlyOnceApp {
    private ExactlyOnceApp() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String appId = args[1];
        String input = args[2];
        String output = args[3];
        String counts = args[4];
        int expected = Integer.parseInt(args[5]);

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, Files.createTempDirectory("streams-eos").toString());
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        var upper = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .mapValues(v -> v.toUpperCase());
        upper.to(output, Produced.with(Serdes.String(), Serdes.String()));
        upper.groupByKey().count().toStream().mapValues(Object::toString)
                .to(counts, Produced.with(Serdes.String(), Serdes.String()));

        try (KafkaStreams streams = new KafkaStreams(builder.build(), p)) {
            streams.start();
            List<String> values = readCommitted(bootstrap, output, expected, 90_000);
            Map<String, String> latest = latestByKey(bootstrap, counts, 90_000, expected);
            System.out.println("output=" + String.join(",", values) + "|counts=" + latest + "|state="
                    + streams.state());
            streams.close(Duration.ofSeconds(30));
        }
        System.exit(0);
    }

    static KafkaConsumer<String, String> committedReader(String bootstrap) {
        Properties c = new Properties();
        c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
    }

    static List<TopicPartition> partitions(KafkaConsumer<String, String> consumer, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        consumer.partitionsFor(topic).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
        return tps;
    }

    static List<String> readCommitted(String bootstrap, String topic, int expected, long timeoutMs) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = committedReader(bootstrap)) {
            consumer.assign(partitions(consumer, topic));
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (values.size() < expected) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("read " + values.size() + " of " + expected + " from " + topic);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        Collections.sort(values);
        return values;
    }

    /** The count per key once the counts' records reached `total` (the sum of the last counts). */
    static Map<String, String> latestByKey(String bootstrap, String topic, long timeoutMs, int total) {
        Map<String, String> latest = new TreeMap<>();
        try (KafkaConsumer<String, String> consumer = committedReader(bootstrap)) {
            consumer.assign(partitions(consumer, topic));
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (latest.values().stream().mapToInt(Integer::parseInt).sum() < total) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("counts never reached " + total + ": " + latest);
                }
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(r.key(), r.value());
                }
            }
        }
        return latest;
    }
}
