package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/** The AdminClient over topics, configs, records, log dirs, the cluster and its features. */
final class AdminScenarios {
    private static final long T = Clients.FUTURE_TIMEOUT_S;
    private static final TimeUnit S = TimeUnit.SECONDS;
    /** A topic id no broker has: fixed, so the error messages that name it compare equal. */
    private static final Uuid NO_SUCH_ID = new Uuid(0x0123456789abcdefL, 0x0fedcba987654321L);

    private AdminScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("admin.topics", AdminScenarios::topics);
        scenarios.put("admin.configs", AdminScenarios::configs);
        scenarios.put("admin.records_and_offsets", AdminScenarios::recordsAndOffsets);
        scenarios.put("admin.cluster", AdminScenarios::cluster);
    }

    /** A config as comparable facts: name -> "value|source|readOnly|sensitive|type" (and synonyms). */
    static ObjectNode configFacts(Config config, boolean synonyms) {
        ObjectNode out = Json.object();
        TreeMap<String, ConfigEntry> sorted = new TreeMap<>();
        config.entries().forEach(e -> sorted.put(e.name(), e));
        for (ConfigEntry e : sorted.values()) {
            String fact = e.value() + "|" + e.source() + "|ro=" + e.isReadOnly() + "|sensitive=" + e.isSensitive()
                    + "|" + e.type();
            if (synonyms) {
                List<String> syn = new ArrayList<>();
                e.synonyms().forEach(s -> syn.add(s.name() + "=" + s.value() + "@" + s.source()));
                fact += "|synonyms=" + syn;
            }
            out.put(e.name(), fact);
        }
        return out;
    }

    static ObjectNode describeFacts(TopicDescription d) {
        ObjectNode out = Json.object();
        out.put("name", d.name());
        out.put("internal", d.isInternal());
        ArrayNode parts = out.putArray("partitions");
        for (TopicPartitionInfo p : d.partitions()) {
            parts.add(p.partition() + " leader=" + p.leader().id() + " replicas=" + ids(p.replicas()) + " isr="
                    + ids(p.isr()) + " elr=" + ids(p.elr()) + " lastKnownElr=" + ids(p.lastKnownElr()));
        }
        out.put("authorized_operations", String.valueOf(d.authorizedOperations() == null ? null
                : new TreeSet<>(d.authorizedOperations())));
        return out;
    }

    private static List<Integer> ids(List<Node> nodes) {
        List<Integer> out = new ArrayList<>();
        if (nodes != null) {
            nodes.forEach(n -> out.add(n.id()));
        }
        return out;
    }

    /** createTopics (configs, validateOnly, errors), listTopics, describeTopics, createPartitions, deleteTopics. */
    static ObjectNode topics(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("admin-topic");
        String other = args.name("admin-topic-by-id");
        Map<String, String> configs = Map.of("cleanup.policy", "compact", "retention.ms", "3600000",
                "min.cleanable.dirty.ratio", "0.2");
        try (Admin admin = Clients.admin(args)) {
            CreateTopicsResult dry = admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1).configs(configs)),
                    new CreateTopicsOptions().validateOnly(true));
            Check.equal(3, dry.numPartitions(topic).get(T, S), "validateOnly: partitions");
            Check.equal(1, dry.replicationFactor(topic).get(T, S), "validateOnly: replication factor");
            facts.set("validate_only_config", configFacts(dry.config(topic).get(T, S), false));
            Check.that(!admin.listTopics().names().get(T, S).contains(topic), "validateOnly created nothing");

            CreateTopicsResult created = admin.createTopics(List.of(
                    new NewTopic(topic, 3, (short) 1).configs(configs),
                    new NewTopic(other, java.util.Optional.empty(), java.util.Optional.empty())));
            created.all().get(T, S);
            Uuid id = created.topicId(topic).get(T, S);
            Check.that(!Uuid.ZERO_UUID.equals(id), "createTopics returns the topic id");
            Check.equal(1, created.numPartitions(other).get(T, S), "default partitions (num.partitions=1)");
            facts.set("created_config", configFacts(created.config(topic).get(T, S), false));
            Clients.awaitPartitions(admin, topic, 3);

            ObjectNode errors = facts.putObject("create_errors");
            errors.set("exists", Check.fails(TopicExistsException.class, "create an existing topic",
                    () -> admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(T, S)));
            errors.set("bad_value", Check.fails(InvalidConfigurationException.class, "an invalid config value",
                    () -> admin.createTopics(List.of(new NewTopic(args.name("bad-value"), 1, (short) 1)
                            .configs(Map.of("cleanup.policy", "sometimes")))).all().get(T, S)));
            errors.set("bad_number", Check.fails(InvalidConfigurationException.class, "a non-numeric config value",
                    () -> admin.createTopics(List.of(new NewTopic(args.name("bad-number"), 1, (short) 1)
                            .configs(Map.of("retention.ms", "soon")))).all().get(T, S)));
            errors.set("unknown_key", Check.fails(InvalidConfigurationException.class, "an unknown config key",
                    () -> admin.createTopics(List.of(new NewTopic(args.name("unknown-key"), 1, (short) 1)
                            .configs(Map.of("no.such.config", "1")))).all().get(T, S)));
            // Range checks name the crossed bound and the parsed value (a double shows as 2.0).
            Map<String, Map<String, String>> outOfRange = new java.util.TreeMap<>(Map.of(
                    "dirty_ratio", Map.of("min.cleanable.dirty.ratio", "2"),
                    "decompressed_zero", Map.of("max.decompressed.message.bytes", "0"),
                    "decompressed_max", Map.of("max.decompressed.message.bytes", "2147483647"),
                    "copy_lag_bytes", Map.of("remote.copy.lag.bytes", "-2"),
                    "lz4_level", Map.of("compression.lz4.level", "20")));
            for (Map.Entry<String, Map<String, String>> c : outOfRange.entrySet()) {
                errors.set(c.getKey(), Check.fails(InvalidConfigurationException.class, "out of range: " + c.getValue(),
                        () -> admin.createTopics(List.of(new NewTopic(args.name("range"), 1, (short) 1)
                                .configs(c.getValue()))).all().get(T, S)));
            }
            errors.set("zero_partitions", Check.fails(InvalidPartitionsException.class, "zero partitions",
                    () -> admin.createTopics(List.of(new NewTopic(args.name("zero"), 0, (short) 1))).all().get(T, S)));
            errors.set("replication_3", Check.fails(InvalidReplicationFactorException.class,
                    "replication factor 3 on one broker",
                    () -> admin.createTopics(List.of(new NewTopic(args.name("rf3"), 1, (short) 3))).all().get(T, S)));
            errors.set("bad_name", Check.fails(InvalidTopicException.class, "an illegal topic name",
                    () -> admin.createTopics(List.of(new NewTopic("bad name!" + args.name(""), 1, (short) 1)))
                            .all().get(T, S)));

            Set<String> names = admin.listTopics().names().get(T, S);
            Check.that(names.contains(topic) && names.contains(other), "listTopics lists both topics");
            Check.that(names.stream().noneMatch(n -> n.startsWith("__")), "listTopics hides internal topics: %s", names);
            Set<String> all = admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(T, S);
            Check.that(all.containsAll(names), "listInternal(true) lists at least as much");

            TopicDescription byName = admin.describeTopics(TopicCollection.ofTopicNames(List.of(topic)),
                    new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames().get(T, S).get(topic);
            Check.equal(id, byName.topicId(), "describeTopics by name: topic id");
            facts.set("describe_by_name", describeFacts(byName));
            TopicDescription byId = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id)))
                    .allTopicIds().get(T, S).get(id);
            Check.equal(topic, byId.name(), "describeTopics by id: name");
            Check.equal(3, byId.partitions().size(), "describeTopics by id: partitions");
            facts.set("describe_by_id", describeFacts(byId));
            facts.set("describe_unknown", Check.fails(UnknownTopicOrPartitionException.class, "describe an unknown topic",
                    () -> admin.describeTopics(List.of(args.name("nope"))).allTopicNames().get(T, S)));
            facts.set("describe_unknown_id", Check.fails(UnknownTopicIdException.class, "describe an unknown topic id",
                    () -> admin.describeTopics(TopicCollection.ofTopicIds(List.of(NO_SUCH_ID)))
                            .allTopicIds().get(T, S)));

            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5)),
                    new CreatePartitionsOptions().validateOnly(true)).all().get(T, S);
            Check.equal(3, admin.describeTopics(List.of(topic)).allTopicNames().get(T, S).get(topic).partitions().size(),
                    "createPartitions validateOnly changes nothing");
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get(T, S);
            Clients.awaitPartitions(admin, topic, 5);
            Check.equal(5, admin.describeTopics(List.of(topic)).allTopicNames().get(T, S).get(topic).partitions().size(),
                    "partitions after createPartitions");
            ObjectNode partErrors = facts.putObject("create_partitions_errors");
            partErrors.set("decrease", Check.fails(InvalidPartitionsException.class, "decrease partitions",
                    () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(2))).all().get(T, S)));
            partErrors.set("same", Check.fails(InvalidPartitionsException.class, "the same partition count",
                    () -> admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(5))).all().get(T, S)));
            partErrors.set("unknown", Check.fails(UnknownTopicOrPartitionException.class, "an unknown topic",
                    () -> admin.createPartitions(Map.of(args.name("nope"), NewPartitions.increaseTo(2))).all()
                            .get(T, S)));

            admin.deleteTopics(TopicCollection.ofTopicNames(List.of(topic))).all().get(T, S);
            Uuid otherId = admin.describeTopics(List.of(other)).allTopicNames().get(T, S).get(other).topicId();
            admin.deleteTopics(TopicCollection.ofTopicIds(List.of(otherId))).all().get(T, S);
            Check.eventually(Clients.API_TIMEOUT_MS, "deleted topics to leave listTopics", () -> {
                try {
                    Set<String> now = admin.listTopics().names().get(T, S);
                    return !now.contains(topic) && !now.contains(other);
                } catch (Exception e) {
                    return false;
                }
            });
            facts.set("delete_again", Check.fails(UnknownTopicOrPartitionException.class, "delete a deleted topic",
                    () -> admin.deleteTopics(List.of(topic)).all().get(T, S)));
            facts.set("delete_unknown_id", Check.fails(UnknownTopicIdException.class, "delete an unknown topic id",
                    () -> admin.deleteTopics(TopicCollection.ofTopicIds(List.of(NO_SUCH_ID))).all().get(T, S)));
        }
        return facts;
    }

    /** describeConfigs (topic and broker) and incrementalAlterConfigs with every op type. */
    static ObjectNode configs(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("admin-configs");
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 1, Map.of("retention.ms", "123456", "cleanup.policy", "delete"));
            Config described = admin.describeConfigs(List.of(res), new DescribeConfigsOptions().includeSynonyms(true))
                    .all().get(T, S).get(res);
            facts.set("described", configFacts(described, true));
            Check.equal("123456", described.get("retention.ms").value(), "retention.ms as created");
            Check.equal(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, described.get("retention.ms").source(),
                    "retention.ms source");

            Map<ConfigResource, Collection<AlterConfigOp>> dry = Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", "999"), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(dry, new AlterConfigsOptions().validateOnly(true)).all().get(T, S);
            Check.equal("123456", value(admin, res, "retention.ms"), "validateOnly changes nothing");

            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("segment.ms", "7200000"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                    .all().get(T, S);
            // Kafka's broker applies a change from its metadata log a moment after the answer.
            awaitConfig(admin, res, "segment.ms", "7200000");
            Config after = admin.describeConfigs(List.of(res)).all().get(T, S).get(res);
            Check.equal("604800000", after.get("retention.ms").value(), "retention.ms back to its default");
            Check.equal(ConfigEntry.ConfigSource.DEFAULT_CONFIG, after.get("retention.ms").source(),
                    "retention.ms source after DELETE");
            Check.equal("7200000", after.get("segment.ms").value(), "segment.ms after SET");
            Check.equal("delete,compact", after.get("cleanup.policy").value(), "cleanup.policy after APPEND");
            facts.set("after_alter", configFacts(after, false));

            admin.incrementalAlterConfigs(Map.of(res, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT))))
                    .all().get(T, S);
            awaitConfig(admin, res, "cleanup.policy", "compact");

            ObjectNode errors = facts.putObject("alter_errors");
            errors.set("bad_number", Check.fails(InvalidConfigurationException.class, "SET retention.ms=abc",
                    () -> admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                            new ConfigEntry("retention.ms", "abc"), AlterConfigOp.OpType.SET)))).all().get(T, S)));
            errors.set("unknown_key", Check.fails(InvalidConfigurationException.class, "SET an unknown key",
                    () -> admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                            new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get(T, S)));
            errors.set("append_scalar", Check.fails(InvalidConfigurationException.class, "APPEND to a non-list key",
                    () -> admin.incrementalAlterConfigs(Map.of(res, List.of(new AlterConfigOp(
                            new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.APPEND)))).all().get(T, S)));
            ConfigResource missing = new ConfigResource(ConfigResource.Type.TOPIC, args.name("nope"));
            errors.set("unknown_topic", Check.fails(UnknownTopicOrPartitionException.class, "alter an unknown topic",
                    () -> admin.incrementalAlterConfigs(Map.of(missing, List.of(new AlterConfigOp(
                            new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))).all().get(T, S)));
            facts.set("describe_unknown_topic", Check.fails(UnknownTopicOrPartitionException.class,
                    "describeConfigs of an unknown topic",
                    () -> admin.describeConfigs(List.of(missing)).all().get(T, S)));

            ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");
            Config brokerConfig = admin.describeConfigs(List.of(broker)).all().get(T, S).get(broker);
            ObjectNode brokerFacts = facts.putObject("broker");
            for (String key : List.of("num.partitions", "auto.create.topics.enable", "message.max.bytes",
                    "log.retention.hours", "log.segment.bytes", "offsets.topic.num.partitions",
                    "group.initial.rebalance.delay.ms", "log.cleanup.policy", "node.id")) {
                ConfigEntry e = brokerConfig.get(key);
                brokerFacts.put(key, e == null ? "<absent>" : e.value() + "|" + e.source() + "|ro=" + e.isReadOnly());
            }
        }
        return facts;
    }

    /** Waits (bounded) until describeConfigs shows `key` = `expected`. */
    private static void awaitConfig(Admin admin, ConfigResource res, String key, String expected) throws Exception {
        Check.eventually(Clients.API_TIMEOUT_MS, key + "=" + expected + " in describeConfigs", () -> {
            try {
                return expected.equals(value(admin, res, key));
            } catch (Exception e) {
                return false;
            }
        });
    }

    private static String value(Admin admin, ConfigResource res, String key) throws Exception {
        return admin.describeConfigs(List.of(res)).all().get(T, S).get(res).get(key).value();
    }

    private static String offsetFact(ListOffsetsResultInfo info) {
        return info.offset() + "@" + info.timestamp() + " epoch=" + info.leaderEpoch();
    }

    /** listOffsets by every spec, deleteRecords, describeLogDirs and describeProducers over one topic. */
    static ObjectNode recordsAndOffsets(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("admin-records");
        TopicPartition tp0 = new TopicPartition(topic, 0);
        TopicPartition tp1 = new TopicPartition(topic, 1);
        long t0 = args.baseTimestamp();
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
            try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
                for (int i = 0; i < 10; i++) {
                    // Record 7 carries the largest timestamp: maxTimestamp must find it, not the last.
                    long ts = i == 7 ? t0 + 20_000 : t0 + i * 1000L;
                    producer.send(new ProducerRecord<>(topic, 0, ts, ProducerScenarios.utf8("k" + i),
                            ProducerScenarios.utf8("v" + i))).get(T, S);
                }
            }
            Map<String, OffsetSpec> specs = new java.util.LinkedHashMap<>();
            specs.put("earliest", OffsetSpec.earliest());
            specs.put("latest", OffsetSpec.latest());
            specs.put("max_timestamp", OffsetSpec.maxTimestamp());
            specs.put("for_timestamp_3500", OffsetSpec.forTimestamp(t0 + 3_500));
            specs.put("for_timestamp_future", OffsetSpec.forTimestamp(t0 + 10_000_000));
            specs.put("earliest_local", OffsetSpec.earliestLocal());
            specs.put("latest_tiered", OffsetSpec.latestTiered());
            ObjectNode offsets = facts.putObject("list_offsets");
            Map<String, ListOffsetsResultInfo> p0 = new HashMap<>();
            for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
                Map<TopicPartition, ListOffsetsResultInfo> r = admin.listOffsets(
                        Map.of(tp0, spec.getValue(), tp1, spec.getValue())).all().get(T, S);
                p0.put(spec.getKey(), r.get(tp0));
                offsets.put(spec.getKey() + " p0", offsetFact(r.get(tp0)));
                offsets.put(spec.getKey() + " p1", offsetFact(r.get(tp1)));
            }
            Check.equal(0L, p0.get("earliest").offset(), "earliest");
            Check.equal(10L, p0.get("latest").offset(), "latest");
            Check.equal(7L, p0.get("max_timestamp").offset(), "maxTimestamp offset");
            Check.equal(t0 + 20_000, p0.get("max_timestamp").timestamp(), "maxTimestamp timestamp");
            Check.equal(4L, p0.get("for_timestamp_3500").offset(), "forTimestamp(t0+3500)");
            Check.equal(t0 + 4_000, p0.get("for_timestamp_3500").timestamp(), "forTimestamp's record timestamp");
            Check.equal(-1L, p0.get("for_timestamp_future").offset(), "forTimestamp past every record");

            DeletedRecords deleted = admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(4)))
                    .lowWatermarks().get(tp0).get(T, S);
            Check.equal(4L, deleted.lowWatermark(), "deleteRecords low watermark");
            Check.equal(4L, admin.listOffsets(Map.of(tp0, OffsetSpec.earliest())).partitionResult(tp0).get(T, S)
                    .offset(), "earliest after deleteRecords");
            facts.set("delete_past_end", Check.fails(OffsetOutOfRangeException.class, "deleteRecords past the end",
                    () -> admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(11))).all().get(T, S)));
            // beforeOffset(-1) means "up to the high watermark".
            Check.equal(10L, admin.deleteRecords(Map.of(tp0, RecordsToDelete.beforeOffset(-1))).lowWatermarks()
                    .get(tp0).get(T, S).lowWatermark(), "deleteRecords to the high watermark");
            Check.equal(10L, admin.listOffsets(Map.of(tp0, OffsetSpec.earliest())).partitionResult(tp0).get(T, S)
                    .offset(), "earliest after deleting everything");
            facts.put("max_timestamp_after_delete",
                    offsetFact(admin.listOffsets(Map.of(tp0, OffsetSpec.maxTimestamp())).partitionResult(tp0).get(T, S)));

            Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(1)).allDescriptions().get(T, S).get(1);
            Check.equal(1, dirs.size(), "one log dir");
            LogDirDescription dir = dirs.values().iterator().next();
            Check.that(dir.error() == null, "log dir error: %s", dir.error());
            Check.that(dir.totalBytes().isPresent() && dir.usableBytes().isPresent()
                    && dir.usableBytes().getAsLong() <= dir.totalBytes().getAsLong(), "total/usable bytes: %s", dir);
            ReplicaInfo r0 = dir.replicaInfos().get(tp0);
            ReplicaInfo r1 = dir.replicaInfos().get(tp1);
            Check.that(r0 != null && r1 != null, "both partitions listed in the log dir");
            facts.put("log_dir_p0", "size=" + r0.size() + " lag=" + r0.offsetLag() + " future=" + r0.isFuture());
            facts.put("log_dir_p1", "size=" + r1.size() + " lag=" + r1.offsetLag() + " future=" + r1.isFuture());
            facts.put("log_dir_cordoned", dir.isCordoned());
        }
        return facts;
    }

    /** describeCluster, describeFeatures and describeProducers. */
    static ObjectNode cluster(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("admin-cluster");
        try (Admin admin = Clients.admin(args)) {
            DescribeClusterResult cluster = admin.describeCluster(
                    new DescribeClusterOptions().includeAuthorizedOperations(true));
            Collection<Node> nodes = cluster.nodes().get(T, S);
            Check.equal(1, nodes.size(), "one node");
            Node node = nodes.iterator().next();
            Check.equal(1, node.id(), "node id");
            Check.equal("127.0.0.1", node.host(), "node host");
            Check.equal(args.bootstrap(), node.host() + ":" + node.port(), "node address");
            Check.equal(1, cluster.controller().get(T, S).id(), "controller (a broker answers with itself)");
            String clusterId = cluster.clusterId().get(T, S);
            Check.that(clusterId != null && Uuid.fromString(clusterId) != null, "cluster id: %s", clusterId);
            facts.put("authorized_operations", String.valueOf(cluster.authorizedOperations().get(T, S)));
            facts.put("rack", String.valueOf(node.rack()));

            FeatureMetadata features = admin.describeFeatures().featureMetadata().get(T, S);
            ObjectNode f = facts.putObject("features");
            f.put("finalized", String.valueOf(new TreeMap<>(features.finalizedFeatures())));
            f.put("supported", String.valueOf(new TreeMap<>(features.supportedFeatures())));
            f.put("epoch_present", features.finalizedFeaturesEpoch().isPresent());

            Clients.createTopic(admin, topic, 1, Map.of());
            TopicPartition tp = new TopicPartition(topic, 0);
            try (KafkaProducer<byte[], byte[]> producer = Clients.producer(args)) {
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, ProducerScenarios.utf8("v" + i))).get(T, S);
                }
            }
            try {
                List<ProducerState> active = admin.describeProducers(List.of(tp)).partitionResult(tp).get(T, S)
                        .activeProducers();
                Check.equal(1, active.size(), "one active producer");
                ProducerState p = active.get(0);
                Check.that(p.producerId() >= 0, "producer id %d", p.producerId());
                Check.equal(2, p.lastSequence(), "last sequence after three records");
                facts.put("describe_producers", "epoch=" + p.producerEpoch() + " lastSequence=" + p.lastSequence()
                        + " coordinatorEpoch=" + p.coordinatorEpoch() + " txnStart="
                        + p.currentTransactionStartOffset());
            } catch (java.util.concurrent.ExecutionException e) {
                facts.put("describe_producers", "error " + e.getCause().getClass().getSimpleName() + ": "
                        + e.getCause().getMessage());
            }
        }
        return facts;
    }
}
