package asyncbroker.oracle;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata.CustomMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

/**
 * Kafka's remote tier in the differential tests: a local directory, laid out exactly as
 * asyncbroker's LocalTieredStorage (storage/local_tiered_storage.py) lays out its own, so that
 * after the same produce the two brokers' remote tiers hold the same files:
 *
 * <pre>
 *   &lt;rsm.config.dir&gt;/&lt;topic&gt;-&lt;partition&gt;-&lt;topic id&gt;/&lt;start offset, 20 digits&gt;-&lt;segment id&gt;.&lt;suffix&gt;
 * </pre>
 *
 * with the suffixes log, index, timeindex, txnindex (only when the segment has one), snapshot
 * and leader_epoch_checkpoint, and ids printed as Kafka prints a Uuid (unpadded URL-safe
 * base64). Written from the RemoteStorageManager interface of kafka-storage-api 4.4.0.
 *
 * <p>Configured by the broker with the keys under remote.log.storage.manager.impl.prefix
 * ("rsm.config."), the prefix removed: {@code dir} is the root directory.
 */
public final class LocalDirRemoteStorageManager implements RemoteStorageManager {
    public static final String DIR_CONFIG = "dir";

    static final String LOG = "log";

    private volatile Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get(DIR_CONFIG);
        if (dir == null || dir.toString().isEmpty()) {
            throw new IllegalArgumentException("rsm.config." + DIR_CONFIG + " (the remote tier's directory) is not set");
        }
        Path path = Paths.get(dir.toString());
        try {
            Files.createDirectories(path);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot create the remote tier's directory " + path, e);
        }
        root = path;
    }

    static String suffix(IndexType type) {
        switch (type) {
            case OFFSET: return "index";
            case TIMESTAMP: return "timeindex";
            case PRODUCER_SNAPSHOT: return "snapshot";
            case TRANSACTION: return "txnindex";
            case LEADER_EPOCH: return "leader_epoch_checkpoint";
            default: throw new IllegalArgumentException("unknown index type " + type);
        }
    }

    static String partitionDirectory(TopicIdPartition tp) {
        return tp.topic() + "-" + tp.partition() + "-" + tp.topicId();
    }

    static String fileName(RemoteLogSegmentMetadata metadata, String suffix) {
        return String.format("%020d-%s.%s", metadata.startOffset(), metadata.remoteLogSegmentId().id(), suffix);
    }

    private Path path(RemoteLogSegmentMetadata metadata, String suffix) {
        Path base = root;
        if (base == null) {
            throw new IllegalStateException("LocalDirRemoteStorageManager used before configure()");
        }
        return base.resolve(partitionDirectory(metadata.topicIdPartition())).resolve(fileName(metadata, suffix));
    }

    @Override
    public Optional<CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata metadata, LogSegmentData data)
            throws RemoteStorageException {
        try {
            Files.createDirectories(path(metadata, LOG).getParent());
            copy(data.logSegment(), path(metadata, LOG));
            copy(data.offsetIndex(), path(metadata, suffix(IndexType.OFFSET)));
            copy(data.timeIndex(), path(metadata, suffix(IndexType.TIMESTAMP)));
            copy(data.producerSnapshotIndex(), path(metadata, suffix(IndexType.PRODUCER_SNAPSHOT)));
            if (data.transactionIndex().isPresent()) {
                copy(data.transactionIndex().get(), path(metadata, suffix(IndexType.TRANSACTION)));
            }
            ByteBuffer epochs = data.leaderEpochIndex().duplicate();
            byte[] bytes = new byte[epochs.remaining()];
            epochs.get(bytes);
            Files.write(path(metadata, suffix(IndexType.LEADER_EPOCH)), bytes);
        } catch (IOException e) {
            throw new RemoteStorageException("Failed to copy " + metadata.remoteLogSegmentId() + " to " + root, e);
        }
        return Optional.empty();
    }

    private static void copy(Path source, Path target) throws IOException {
        Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition)
            throws RemoteStorageException {
        return open(metadata, startPosition, Long.MAX_VALUE);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata metadata, int startPosition, int endPosition)
            throws RemoteStorageException {
        // endPosition is inclusive.
        return open(metadata, startPosition, Math.max(0L, (long) endPosition - startPosition + 1));
    }

    private InputStream open(RemoteLogSegmentMetadata metadata, int startPosition, long length)
            throws RemoteStorageException {
        if (startPosition < 0) {
            throw new IllegalArgumentException("negative start position " + startPosition);
        }
        Path file = path(metadata, LOG);
        try {
            FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
            channel.position(startPosition);
            return new Limited(Channels.newInputStream(channel), length);
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("No remote segment " + file, e);
        } catch (IOException e) {
            throw new RemoteStorageException("Failed to read " + file, e);
        }
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata metadata, IndexType indexType)
            throws RemoteStorageException {
        Path file = path(metadata, suffix(indexType));
        try {
            return Files.newInputStream(file);
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("No remote " + indexType + " index " + file, e);
        } catch (IOException e) {
            throw new RemoteStorageException("Failed to read " + file, e);
        }
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata metadata) throws RemoteStorageException {
        try {
            Files.deleteIfExists(path(metadata, LOG));
            for (IndexType type : IndexType.values()) {
                Files.deleteIfExists(path(metadata, suffix(type)));
            }
        } catch (IOException e) {
            throw new RemoteStorageException("Failed to delete " + metadata.remoteLogSegmentId() + " from " + root, e);
        }
    }

    @Override
    public void close() {
    }

    /** At most `remaining` bytes of a stream. */
    private static final class Limited extends FilterInputStream {
        private long remaining;

        Limited(InputStream in, long remaining) {
            super(in);
            this.remaining = remaining;
        }

        @Override
        public int read() throws IOException {
            if (remaining <= 0) {
                return -1;
            }
            int b = super.read();
            if (b >= 0) {
                remaining--;
            }
            return b;
        }

        @Override
        public int read(byte[] buf, int off, int len) throws IOException {
            if (remaining <= 0) {
                return len == 0 ? 0 : -1;
            }
            int n = super.read(buf, off, (int) Math.min(len, remaining));
            if (n > 0) {
                remaining -= n;
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            long skipped = super.skip(Math.min(n, remaining));
            remaining -= skipped;
            return skipped;
        }

        @Override
        public int available() throws IOException {
            return (int) Math.min(super.available(), remaining);
        }

        @Override
        public boolean markSupported() {
            return false;
        }
    }
}
