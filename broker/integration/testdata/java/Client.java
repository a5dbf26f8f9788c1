// The Java Kafka client (kafka-clients, built from source by
// hack/java-kafka-client.sh) against the brokers in BROKERS.
//
// Without arguments it creates TOPIC through the admin client, produces
// COUNT records with the client's defaults for a current producer
// (idempotent, acks=all, five batches in flight) and zstd, consumes them in
// a consumer group with the cooperative-sticky assignor committing by hand,
// makes the admin calls Kafka's tools make, and prints what it saw as JSON
// in the shape the other client programs print. With produce-until-eof it
// produces to an existing TOPIC while the test kills brokers.
//
// Run as a single source file: java -cp <jars> Client.java [produce-until-eof]

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Client {
    public static void main(String[] args) throws Exception {
        Properties common = new Properties();
        common.put("bootstrap.servers", System.getenv("BROKERS"));
        // More client properties, one key=value per line (security ones).
        String extra = System.getenv("KAFKA_PROPERTIES");
        if (extra != null) {
            for (String line : extra.split("\n")) {
                int eq = line.indexOf('=');
                if (eq > 0) {
                    common.put(line.substring(0, eq), line.substring(eq + 1));
                }
            }
        }
        String topic = System.getenv("TOPIC");
        if (args.length > 0 && args[0].equals("produce-until-eof")) {
            produceUntilEOF(common, topic, Integer.parseInt(System.getenv("PARTITIONS")));
            return;
        }
        roundTrip(common, topic, Integer.parseInt(System.getenv("COUNT")));
    }

    // produceUntilEOF produces records numbered 0, 1, ... to the partitions
    // of topic in turn until standard input closes, with the producer's
    // defaults (idempotent, acks=all, retries until delivery.timeout.ms), and
    // prints a line for each outcome: "ack <partition> <offset> <value>" or
    // "fail <value> <error>". The test kills brokers meanwhile.
    static void produceUntilEOF(Properties common, String topic, int partitions) throws Exception {
        Properties props = new Properties();
        props.putAll(common);
        props.put("request.timeout.ms", "5000");
        props.put("retry.backoff.ms", "100");
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (java.io.IOException e) {
                // closed either way
            }
        });
        watcher.start();
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(props, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; watcher.isAlive(); i++) {
                String value = Integer.toString(i);
                producer.send(new ProducerRecord<>(topic, i % partitions, null, value), (md, err) -> {
                    synchronized (System.out) {
                        if (err == null) {
                            System.out.println("ack " + md.partition() + " " + md.offset() + " " + value);
                        } else {
                            System.out.println("fail " + value + " " + err);
                        }
                    }
                });
                if (i % 50 == 0) {
                    Thread.sleep(5);
                }
            }
            producer.flush();
        }
    }

    static void roundTrip(Properties common, String topic, int count) throws Exception {

        try (Admin admin = Admin.create(common)) {
            admin.createTopics(List.of(new NewTopic(topic, 3, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")))).all().get();
            TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            if (described.partitions().size() != 3 || described.partitions().get(0).replicas().size() != 3) {
                throw new IllegalStateException("described " + described);
            }
        }

        Properties producerProps = new Properties();
        producerProps.putAll(common);
        producerProps.put("compression.type", "zstd");
        producerProps.put("linger.ms", "5");
        int acked = 0;
        try (KafkaProducer<String, String> producer =
                new KafkaProducer<>(producerProps, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, "k" + (i % 7), "v" + i)));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                if (f.get().hasOffset()) {
                    acked++;
                }
            }
        }

        Properties consumerProps = new Properties();
        consumerProps.putAll(common);
        consumerProps.put("group.id", topic + "-group");
        consumerProps.put("enable.auto.commit", "false");
        consumerProps.put("auto.offset.reset", "earliest");
        consumerProps.put("partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
        StringBuilder seen = new StringBuilder();
        StringBuilder committed = new StringBuilder();
        StringBuilder ends = new StringBuilder();
        try (KafkaConsumer<String, String> consumer =
                new KafkaConsumer<>(consumerProps, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            int seenCount = 0;
            for (int polls = 0; seenCount < count && polls < 120; polls++) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    seen.append(seenCount++ == 0 ? "" : ",").append(String.format(
                            "{\"Partition\":%d,\"Offset\":\"%d\",\"Key\":\"%s\",\"Value\":\"%s\"}",
                            r.partition(), r.offset(), r.key(), r.value()));
                }
                consumer.commitSync();
            }
            Set<TopicPartition> parts = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toSet());
            Map<TopicPartition, Long> endOffsets = consumer.endOffsets(parts);
            Map<TopicPartition, OffsetAndMetadata> offsets = consumer.committed(parts);
            for (TopicPartition tp : parts) {
                String sep = ends.length() == 0 ? "" : ",";
                ends.append(sep).append(String.format("{\"Partition\":%d,\"High\":\"%d\"}",
                        tp.partition(), endOffsets.get(tp)));
                OffsetAndMetadata om = offsets.get(tp);
                committed.append(sep).append(String.format("{\"Partition\":%d,\"Offset\":\"%d\"}",
                        tp.partition(), om == null ? -1 : om.offset()));
            }
        }
        administer(common, topic);
        System.out.printf("{\"Acked\":%d,\"Seen\":[%s],\"Committed\":[%s],\"Ends\":[%s]}%n",
                acked, seen, committed, ends);
    }

    // administer runs what Kafka's own tools (kafka-topics, kafka-configs,
    // kafka-consumer-groups, kafka-delete-records) do through the admin
    // client. The test reads the outcome back with franz-go: TOPIC-grown has
    // 4 partitions and retention.ms 3600000, TOPIC-deleted is gone, and
    // partition 0 of TOPIC starts at offset 10. The consumer group TOPIC-group
    // is empty and has committed all 3 partitions.
    static void administer(Properties common, String topic) throws Exception {
        try (Admin admin = Admin.create(common)) {
            int nodes = admin.describeCluster().nodes().get().size();
            if (nodes != 3) {
                throw new IllegalStateException("describeCluster: " + nodes + " nodes");
            }
            String grown = topic + "-grown", deleted = topic + "-deleted", group = topic + "-group";
            admin.createTopics(List.of(new NewTopic(grown, 2, (short) 3), new NewTopic(deleted, 1, (short) 1)))
                    .all().get();
            admin.createPartitions(Map.of(grown, NewPartitions.increaseTo(4))).all().get();
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, grown);
            admin.incrementalAlterConfigs(Map.of(resource, List.of(new AlterConfigOp(
                    new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET)))).all().get();
            String retention = admin.describeConfigs(List.of(resource)).all().get()
                    .get(resource).get("retention.ms").value();
            if (!retention.equals("3600000")) {
                throw new IllegalStateException("describeConfigs: retention.ms " + retention);
            }
            admin.deleteTopics(List.of(deleted)).all().get();

            var groups = admin.listConsumerGroups().all().get().stream()
                    .map(g -> g.groupId()).collect(Collectors.toList());
            if (!groups.contains(group)) {
                throw new IllegalStateException("listConsumerGroups: " + groups);
            }
            var description = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            if (description.state() != ConsumerGroupState.EMPTY) {
                throw new IllegalStateException("describeConsumerGroups: " + description);
            }
            var offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            if (offsets.size() != 3) {
                throw new IllegalStateException("listConsumerGroupOffsets: " + offsets);
            }
            TopicPartition first = new TopicPartition(topic, 0);
            long low = admin.deleteRecords(Map.of(first, RecordsToDelete.beforeOffset(10))).lowWatermarks()
                    .get(first).get().lowWatermark();
            long earliest = admin.listOffsets(Map.of(first, OffsetSpec.earliest())).all().get()
                    .get(first).offset();
            if (low != 10 || earliest != 10) {
                throw new IllegalStateException("deleteRecords: low watermark " + low + ", earliest " + earliest);
            }
            reassign(admin, topic + "-moved");
        }
    }

    // reassign makes the calls of kafka-topics.sh --replica-assignment,
    // kafka-reassign-partitions.sh (with --throttle) and
    // kafka-leader-election.sh: TOPIC is created on brokers [2,1] and
    // [0,2], grows a partition on [1,2], and its partition 0 moves to [0,1].
    static void reassign(Admin admin, String moved) throws Exception {
        admin.createTopics(List.of(new NewTopic(moved, Map.of(0, List.of(2, 1), 1, List.of(0, 2))))).all().get();
        admin.createPartitions(Map.of(moved, NewPartitions.increaseTo(3, List.of(List.of(1, 2))))).all().get();
        ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "0");
        admin.incrementalAlterConfigs(Map.of(broker, List.of(new AlterConfigOp(
                new ConfigEntry("follower.replication.throttled.rate", "10000000"), AlterConfigOp.OpType.SET)))).all().get();
        TopicPartition first = new TopicPartition(moved, 0);
        try {
            admin.alterPartitionReassignments(Map.of(first, Optional.empty())).all().get();
            throw new IllegalStateException("cancelled a move that did not exist");
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof NoReassignmentInProgressException)) {
                throw e;
            }
        }
        admin.alterPartitionReassignments(Map.of(first, Optional.of(new NewPartitionReassignment(List.of(0, 1))))).all().get();
        for (int i = 0; !admin.listPartitionReassignments().reassignments().get().isEmpty(); i++) {
            if (i > 300) {
                throw new IllegalStateException("the move did not finish in 30 s");
            }
            Thread.sleep(100);
        }
        TopicDescription described = admin.describeTopics(List.of(moved)).allTopicNames().get().get(moved);
        List<Integer> replicas = described.partitions().get(0).replicas().stream().map(n -> n.id()).collect(Collectors.toList());
        List<Integer> grown = described.partitions().get(2).replicas().stream().map(n -> n.id()).collect(Collectors.toList());
        if (!replicas.equals(List.of(0, 1)) || !grown.equals(List.of(1, 2))) {
            throw new IllegalStateException("replicas after the move " + replicas + ", of the new partition " + grown);
        }
        try {
            admin.electLeaders(ElectionType.PREFERRED, Set.of(first)).partitions().get().get(first).ifPresent(e -> {
                if (!(e instanceof ElectionNotNeededException)) {
                    throw new IllegalStateException("electLeaders: " + e);
                }
            });
        } catch (ExecutionException e) {
            throw new IllegalStateException("electLeaders", e);
        }
    }
}
