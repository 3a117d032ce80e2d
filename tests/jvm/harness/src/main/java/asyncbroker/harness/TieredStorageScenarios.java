package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

/** A tiered topic (KIP-405) read by the Java clients: most of it only in remote storage. */
final class TieredStorageScenarios {
    private TieredStorageScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("tiered.read_from_remote", TieredStorageScenarios::readFromRemote);
    }

    static long offsetOf(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        ListOffsetsResult result = admin.listOffsets(Map.of(tp, spec));
        return result.partitionResult(tp).get().offset();
    }

    static byte[] value(int i) {
        byte[] v = new byte[1000];
        Arrays.fill(v, (byte) ('a' + i % 26));
        return v;
    }

    /**
     * Produces `records` 1000-byte records (record i stamped t0 + i) to a tiered topic with 1 MiB
     * segments and local.retention.bytes=1, waits until the local log starts past offset 0 (the
     * older segments are only remote), then reads every record from the beginning, looks one up
     * by time in the remote tier, and reports the boundaries (earliest, earliest local, latest
     * tiered, latest).
     */
    static ObjectNode readFromRemote(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("tiered");
        int records = args.intOr("records", 4000);
        long t0 = args.baseTimestamp();
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of("remote.storage.enable", "true", "segment.bytes", "1048576",
                    "local.retention.bytes", "1"));
            try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
                for (int i = 0; i < records; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, t0 + i, ProducerScenarios.utf8("k" + i), value(i)));
                }
                producer.flush();
            }
            long deadline = System.nanoTime() + 60_000_000_000L;
            long earliestLocal = offsetOf(admin, tp, OffsetSpec.earliestLocal());
            while (earliestLocal == 0) {
                if (System.nanoTime() > deadline) {
                    throw new Check.Failed("the local log still starts at 0 after 60 s: nothing was tiered");
                }
                Thread.sleep(100); // polling the broker's state, bounded by the deadline
                earliestLocal = offsetOf(admin, tp, OffsetSpec.earliestLocal());
            }
            facts.put("earliest", offsetOf(admin, tp, OffsetSpec.earliest()));
            long latest = offsetOf(admin, tp, OffsetSpec.latest());
            facts.put("latest", latest);
            // Copies go on meanwhile, so the latest tiered offset is compared with what cannot move.
            long latestTiered = offsetOf(admin, tp, OffsetSpec.latestTiered());
            facts.put("earliest_local_above_0", earliestLocal > 0);
            facts.put("latest_tiered_in_the_log", latestTiered >= earliestLocal - 1 && latestTiered < latest);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(args)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            List<ConsumerRecord<byte[], byte[]>> got = Clients.pollFor(consumer, records, 60_000);
            for (int i = 0; i < records; i++) {
                ConsumerRecord<byte[], byte[]> r = got.get(i);
                Check.equal((long) i, r.offset(), "offset of record " + i);
                Check.equal(t0 + i, r.timestamp(), "timestamp of record " + i);
                Check.equal(true, Arrays.equals(value(i), r.value()), "value of record " + i);
            }
            facts.put("records_read", got.size());
            Map<TopicPartition, OffsetAndTimestamp> byTime = consumer.offsetsForTimes(Map.of(tp, t0 + 10));
            facts.put("offset_for_time_t0_plus_10", byTime.get(tp).offset());
        }
        return facts;
    }
}
