import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.snapshot.FileRawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;

/**
 * A metadata snapshot written by Kafka's own code (RecordsSnapshotWriter, MetadataRecordSerde):
 * the "independent encoder" of bench/replay.py's kafka-* directories, so that mdshell is measured
 * on the batches and records Kafka makes, not only on those its own writer makes.
 *
 * Usage: java -cp KAFKA_JARS KafkaSnapshot.java DIR TOPICS PARTITIONS BROKERS MAX_BATCH_BYTES
 *        [MV [CODEC]]
 *
 * Writes DIR/__cluster_metadata-0/{end offset}-{epoch}.checkpoint holding metadata.version MV
 * (such as 4.2-IV1; default or "latest": the latest production level), its batches compressed
 * by CODEC (none, gzip, snappy, lz4, zstd; default none), BROKERS broker registrations, TOPICS topics of PARTITIONS
 * partitions each (replication factor 3, the ISR whole, three log directories), each record
 * at the version that metadata.version gives it. Seeded: the same arguments give the same
 * bytes except the snapshot's timestamps.
 */
public class KafkaSnapshot {
    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0], "__cluster_metadata-0");
        int topics = Integer.parseInt(args[1]);
        int partitions = Integer.parseInt(args[2]);
        int brokers = Integer.parseInt(args[3]);
        int maxBatch = Integer.parseInt(args[4]);
        Files.createDirectories(dir);
        MetadataVersion mv = args.length > 5 && !args[5].equals("latest")
                ? MetadataVersion.fromVersionString(args[5], true)
                : MetadataVersion.latestProduction();
        Compression codec = args.length > 6 ? Compression.of(args[6]).build() : Compression.NONE;
        Random rng = new Random(7);
        long records = 1 + brokers + (long) topics * (1 + partitions);
        OffsetAndEpoch id = new OffsetAndEpoch(records, 1);
        try (RecordsSnapshotWriter<ApiMessageAndVersion> w = new RecordsSnapshotWriter.Builder()
                .setKraftVersion(KRaftVersion.KRAFT_VERSION_0)
                .setMaxBatchSizeBytes(maxBatch)
                .setCompression(codec)
                .setLastContainedLogTimestamp(1_700_000_000_000L)
                .setRawSnapshotWriter(FileRawSnapshotWriter.create(dir, id))
                .build(new MetadataRecordSerde())) {
            w.append(List.of(new ApiMessageAndVersion(new FeatureLevelRecord()
                    .setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(mv.featureLevel()),
                    (short) 0)));
            List<Uuid> dirs = new ArrayList<>();
            for (int b = 0; b < brokers; b++) {
                RegisterBrokerRecord.BrokerEndpointCollection eps =
                        new RegisterBrokerRecord.BrokerEndpointCollection();
                eps.add(new RegisterBrokerRecord.BrokerEndpoint().setName("PLAINTEXT")
                        .setHost("broker-" + b).setPort(9092).setSecurityProtocol((short) 0));
                Uuid logDir = new Uuid(rng.nextLong(), rng.nextLong());
                dirs.add(logDir);
                w.append(List.of(new ApiMessageAndVersion(new RegisterBrokerRecord()
                        .setBrokerId(b).setIncarnationId(new Uuid(rng.nextLong(), rng.nextLong()))
                        .setBrokerEpoch(10 + b).setEndPoints(eps).setLogDirs(List.of(logDir))
                        .setFenced(false),
                        mv.registerBrokerRecordVersion())));
            }
            for (int t = 0; t < topics; t++) {
                Uuid topicId = new Uuid(rng.nextLong(), rng.nextLong());
                w.append(List.of(new ApiMessageAndVersion(new TopicRecord()
                        .setName(String.format("topic-%05d", t)).setTopicId(topicId), (short) 0)));
                for (int p = 0; p < partitions; p++) {
                    int first = rng.nextInt(brokers);
                    List<Integer> replicas = List.of(first, (first + 1) % brokers,
                            (first + 2) % brokers);
                    List<Uuid> onDirs = List.of(dirs.get(replicas.get(0)),
                            dirs.get(replicas.get(1)), dirs.get(replicas.get(2)));
                    PartitionRecord record = new PartitionRecord().setTopicId(topicId)
                            .setPartitionId(p).setReplicas(replicas).setIsr(replicas)
                            .setLeader(first).setLeaderEpoch(rng.nextInt(5))
                            .setPartitionEpoch(rng.nextInt(5));
                    short version = mv.partitionRecordVersion();
                    if (version >= 1) {
                        record.setDirectories(onDirs);
                    }
                    w.append(List.of(new ApiMessageAndVersion(record, version)));
                }
            }
            w.freeze();
        }
    }
}
