package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListConsumerGroupsOptions;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.errors.UnknownMemberIdException;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/** The AdminClient over consumer groups: list (with filters), describe, offsets, delete. */
final class GroupAdminScenarios {
    private static final long T = Clients.FUTURE_TIMEOUT_S;
    private static final TimeUnit S = TimeUnit.SECONDS;

    private GroupAdminScenarios() {
    }

    static void register(Map<String, Scenario> scenarios) {
        scenarios.put("admin.consumer_groups", GroupAdminScenarios::consumerGroups);
    }

    /** Our groups (by id) among a listing, as "id state type simple". */
    private static Map<String, String> ours(Collection<ConsumerGroupListing> listing, Set<String> ids) {
        Map<String, String> out = new TreeMap<>();
        for (ConsumerGroupListing g : listing) {
            if (ids.contains(g.groupId())) {
                out.put(g.groupId(), g.groupState().map(Enum::name).orElse("?") + " " + g.type().map(Enum::name).orElse("?")
                        + " simple=" + g.isSimpleConsumerGroup());
            }
        }
        return out;
    }

    private static Map<String, String> oursGeneric(Collection<GroupListing> listing, Set<String> ids) {
        Map<String, String> out = new TreeMap<>();
        for (GroupListing g : listing) {
            if (ids.contains(g.groupId())) {
                out.put(g.groupId(), g.groupState().map(Enum::name).orElse("?") + " " + g.type().map(Enum::name).orElse("?")
                        + " protocol=" + g.protocol() + " simple=" + g.isSimpleConsumerGroup());
            }
        }
        return out;
    }

    private static String describe(ConsumerGroupDescription d) {
        StringBuilder sb = new StringBuilder();
        sb.append(d.groupState()).append(" type=").append(d.type()).append(" simple=").append(d.isSimpleConsumerGroup())
                .append(" assignor=").append(d.partitionAssignor()).append(" coordinator=").append(d.coordinator().id())
                .append(" groupEpoch=").append(d.groupEpoch()).append(" targetEpoch=").append(d.targetAssignmentEpoch())
                .append(" members=[");
        for (MemberDescription m : d.members()) {
            TreeSet<String> parts = new TreeSet<>();
            m.assignment().topicPartitions().forEach(tp -> parts.add(String.valueOf(tp.partition())));
            sb.append("client=").append(m.clientId()).append(" host=").append(m.host()).append(" instance=")
                    .append(m.groupInstanceId()).append(" assignment=").append(parts).append(" epoch=")
                    .append(m.memberEpoch()).append(" upgraded=").append(m.upgraded()).append(";");
        }
        return sb.append("]").toString();
    }

    static ObjectNode consumerGroups(Args args) throws Exception {
        ObjectNode facts = Json.object();
        String topic = args.name("groups-admin");
        String active = args.name("active");
        String empty = args.name("empty");
        String simple = args.name("simple");
        String unknown = args.name("unknown");
        Set<String> ids = Set.of(active, empty, simple);
        List<TopicPartition> tps = ConsumerScenarios.partitions(topic, 2);
        TopicPartition tp0 = tps.get(0);
        TopicPartition tp1 = tps.get(1);
        try (Admin admin = Clients.admin(args)) {
            Clients.createTopic(admin, topic, 2, Map.of());
            ConsumerScenarios.fill(args, topic, 2, 5, args.baseTimestamp());
            // empty: a subscribed group that committed and left; simple: assign() and commit only.
            try (KafkaConsumer<byte[], byte[]> c = Clients.consumer(args, empty,
                    Map.of(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200))) {
                c.subscribe(List.of(topic));
                Clients.pollFor(c, 10, 30_000);
                c.commitSync();
            }
            try (KafkaConsumer<byte[], byte[]> c = Clients.consumer(args, simple, Map.of())) {
                c.assign(tps);
                c.commitSync(Map.of(tp0, new OffsetAndMetadata(1, "simple-meta")));
            }
            try (KafkaConsumer<byte[], byte[]> member = Clients.consumer(args, active, Map.of(
                    ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 200, ConsumerConfig.CLIENT_ID_CONFIG, "member-a"))) {
                member.subscribe(List.of(topic));
                Clients.pollFor(member, 10, 30_000);
                member.commitSync(Map.of(tp0, new OffsetAndMetadata(5, "a0"), tp1, new OffsetAndMetadata(3, "a1")));

                Map<String, String> all = ours(admin.listConsumerGroups().all().get(T, S), ids);
                Check.equal(ids, all.keySet(), "listConsumerGroups lists our three groups");
                facts.putPOJO("list", all);
                Map<String, String> stable = ours(admin.listConsumerGroups(new ListConsumerGroupsOptions()
                        .inGroupStates(Set.of(GroupState.STABLE))).all().get(T, S), ids);
                Check.equal(Set.of(active), stable.keySet(), "the STABLE filter");
                facts.putPOJO("list_stable", stable);
                facts.putPOJO("list_empty", ours(admin.listConsumerGroups(new ListConsumerGroupsOptions()
                        .inGroupStates(Set.of(GroupState.EMPTY))).all().get(T, S), ids));
                facts.putPOJO("list_classic", ours(admin.listConsumerGroups(new ListConsumerGroupsOptions()
                        .withTypes(Set.of(GroupType.CLASSIC))).all().get(T, S), ids));
                facts.putPOJO("list_consumer_type", ours(admin.listConsumerGroups(new ListConsumerGroupsOptions()
                        .withTypes(Set.of(GroupType.CONSUMER))).all().get(T, S), ids));
                facts.putPOJO("list_groups", oursGeneric(admin.listGroups().all().get(T, S), ids));
                facts.putPOJO("list_groups_consumer", oursGeneric(admin.listGroups(ListGroupsOptions.forConsumerGroups())
                        .all().get(T, S), ids));

                Map<String, ConsumerGroupDescription> described = admin.describeConsumerGroups(
                        List.of(active, empty, simple)).all().get(T, S);
                Check.equal(GroupState.STABLE, described.get(active).groupState(), "the active group's state");
                Check.equal(1, described.get(active).members().size(), "the active group's members");
                Check.equal(GroupState.EMPTY, described.get(empty).groupState(), "the empty group's state");
                ObjectNode d = facts.putObject("describe");
                for (String g : List.of(active, empty, simple)) {
                    d.put(g.equals(active) ? "active" : g.equals(empty) ? "empty" : "simple", describe(described.get(g)));
                }
                facts.set("describe_unknown", Check.fails(GroupIdNotFoundException.class, "describe an unknown group",
                        () -> admin.describeConsumerGroups(List.of(unknown)).all().get(T, S)));

                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(active)
                        .partitionsToOffsetAndMetadata().get(T, S);
                Check.equal(5L, offsets.get(tp0).offset(), "listConsumerGroupOffsets p0");
                Check.equal("a1", offsets.get(tp1).metadata(), "listConsumerGroupOffsets p1 metadata");
                facts.put("offsets_active", String.valueOf(new TreeMap<>(Map.of(
                        "p0", String.valueOf(offsets.get(tp0)), "p1", String.valueOf(offsets.get(tp1))))));
                Map<TopicPartition, OffsetAndMetadata> some = admin.listConsumerGroupOffsets(Map.of(simple,
                        new ListConsumerGroupOffsetsSpec().topicPartitions(tps))).partitionsToOffsetAndMetadata(simple)
                        .get(T, S);
                Check.equal(1L, some.get(tp0).offset(), "the simple group's committed offset");
                Check.that(some.get(tp1) == null, "an uncommitted partition is null: %s", some);
                facts.put("offsets_unknown_group", String.valueOf(admin.listConsumerGroupOffsets(unknown)
                        .partitionsToOffsetAndMetadata().get(T, S)));

                admin.alterConsumerGroupOffsets(empty, Map.of(tp0, new OffsetAndMetadata(2, "altered"))).all().get(T, S);
                Check.equal(2L, admin.listConsumerGroupOffsets(empty).partitionsToOffsetAndMetadata().get(T, S)
                        .get(tp0).offset(), "offset after alterConsumerGroupOffsets");
                facts.set("alter_active", Check.fails(UnknownMemberIdException.class,
                        "alterConsumerGroupOffsets of a group with members",
                        () -> admin.alterConsumerGroupOffsets(active, Map.of(tp0, new OffsetAndMetadata(0))).all()
                                .get(T, S)));

                facts.set("delete_offsets_subscribed", Check.fails(GroupSubscribedToTopicException.class,
                        "deleteConsumerGroupOffsets of a subscribed topic",
                        () -> admin.deleteConsumerGroupOffsets(active, Set.of(tp0)).all().get(T, S)));
                admin.deleteConsumerGroupOffsets(empty, Set.of(tp0)).all().get(T, S);
                Map<TopicPartition, OffsetAndMetadata> left = admin.listConsumerGroupOffsets(empty)
                        .partitionsToOffsetAndMetadata().get(T, S);
                Check.that(!left.containsKey(tp0) && left.containsKey(tp1), "offsets left after the delete: %s", left);
                facts.set("delete_offsets_unknown_group", Check.fails(GroupIdNotFoundException.class,
                        "deleteConsumerGroupOffsets of an unknown group",
                        () -> admin.deleteConsumerGroupOffsets(unknown, Set.of(tp0)).all().get(T, S)));

                facts.set("delete_non_empty", Check.fails(GroupNotEmptyException.class, "delete a group with members",
                        () -> admin.deleteConsumerGroups(List.of(active)).all().get(T, S)));
                admin.deleteConsumerGroups(List.of(empty, simple)).all().get(T, S);
                facts.set("delete_unknown", Check.fails(GroupIdNotFoundException.class, "delete an unknown group",
                        () -> admin.deleteConsumerGroups(List.of(unknown)).all().get(T, S)));
                Map<String, String> afterDelete = ours(admin.listConsumerGroups().all().get(T, S), ids);
                Check.equal(Set.of(active), afterDelete.keySet(), "groups left after deleteConsumerGroups");
                member.poll(Duration.ofMillis(10));
            }
            // The member left: the group is empty and can go.
            Check.eventually(Clients.API_TIMEOUT_MS, "the active group to become empty", () -> {
                try {
                    return admin.describeConsumerGroups(List.of(active)).all().get(T, S).get(active).groupState()
                            == GroupState.EMPTY;
                } catch (Exception e) {
                    return false;
                }
            });
            admin.deleteConsumerGroups(List.of(active)).all().get(T, S);
            Check.that(ours(admin.listConsumerGroups().all().get(T, S), ids).isEmpty(), "all three groups deleted");
        }
        return facts;
    }
}
