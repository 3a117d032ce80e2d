package asyncbroker.streams;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.Properties;

/**
 * Word count as the Kafka Streams quickstart writes it: lines from `input` are split into
 * words, re-keyed by word (a repartition topic), counted in a state store (a compacted
 * changelog topic) and the counts written to `output`. Two stream threads share the tasks
 * (cooperative rebalancing); repartition topics are purged (DeleteRecords) after each commit.
 * It runs until its stdin closes, printing "state=<new state>" at each state change.
 *
 * Arguments: bootstrap application-id state-dir input output processing-guarantee
 */
public final class WordCountApp {
    private WordCountApp() {
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args[5]);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(args[3], Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
                .filter((key, word) -> !word.isEmpty())
                .groupBy((key, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
                .count(Materialized.as("counts"))
                .toStream()
                .mapValues(Object::toString)
                .to(args[4], Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), p);
        streams.setStateListener((now, before) -> {
            System.out.println("state=" + now);
            System.out.flush();
        });
        streams.start();
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
            while (in.readLine() != null) {
                // runs until the test closes stdin
            }
        }
        streams.close(Duration.ofSeconds(30));
        System.out.println("closed");
        System.exit(0);
    }
}
