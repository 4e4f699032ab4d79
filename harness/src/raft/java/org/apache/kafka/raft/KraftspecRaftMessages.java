package org.apache.kafka.raft;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.BeginQuorumEpochRequestData;
import org.apache.kafka.common.message.BeginQuorumEpochResponseData;
import org.apache.kafka.common.message.DescribeQuorumRequestData;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.message.EndQuorumEpochRequestData;
import org.apache.kafka.common.message.EndQuorumEpochResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.FetchSnapshotRequestData;
import org.apache.kafka.common.message.FetchSnapshotResponseData;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.AddRaftVoterResponseData;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.KRaftVersionRecord;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterResponseData;
import org.apache.kafka.common.message.UpdateRaftVoterRequestData;
import org.apache.kafka.common.message.UpdateRaftVoterResponseData;
import org.apache.kafka.common.message.VoteRequestData;
import org.apache.kafka.common.message.VoteResponseData;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.protocol.Writable;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.BaseRecords;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.ControlRecordUtils;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.record.internal.UnalignedMemoryRecords;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.common.memory.MemoryPool;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.server.common.OffsetAndEpoch;
import org.apache.kafka.snapshot.MockRawSnapshotWriter;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.snapshot.SnapshotWriter;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.server.common.serialization.RecordSerde;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Translation between kraftspec's raft trace vocabulary ({@code kraftspec.reference.raft_messages}: snake_case
 * fields, error names, log entries {@code {"epoch", "record"}}, where {@code "starts_batch": false} puts an entry in
 * the batch of the entry before it) and Kafka's RPC data classes and record batches.
 * No Kafka logic lives here: only field-for-field copies, and the stand-ins a trace leaves open (a node without a
 * directory id or cluster id, see {@link KraftspecRaftSession}).
 *
 * <p>Data records are JSON values (a string, an integer or null); Kafka's client carries each as its JSON text
 * ({@link #SERDE}). A control record (an object: {@code LeaderChangeMessage}, {@code KRaftVersionRecord} or
 * {@code VotersRecord}) sits in a control batch.
 */
final class KraftspecRaftMessages {
    static final ObjectMapper JSON = new ObjectMapper();
    static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    static final TopicPartition METADATA_PARTITION = new TopicPartition("__cluster_metadata", 0);

    /** The client's record type: a data record's JSON text, stored as its UTF-8 bytes. */
    static final RecordSerde<String> SERDE = new RecordSerde<>() {
        @Override
        public int recordSize(String data, ObjectSerializationCache cache) {
            return data.getBytes(StandardCharsets.UTF_8).length;
        }

        @Override
        public void write(String data, ObjectSerializationCache cache, Writable out) {
            out.writeByteArray(data.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String read(Readable input, int size) {
            return new String(input.readArray(size), StandardCharsets.UTF_8);
        }
    };

    private final ListenerName listener;
    private final Uuid localDirectoryStandIn; // null: the trace states the node's directory id
    private final String clusterStandIn; // null: the trace states the cluster id
    /** The control records the trace's chunk from byte 0 of each fetched snapshot stated (its later chunks' bytes). */
    private final Map<OffsetAndEpoch, SnapshotControl> fetchedControl = new HashMap<>();

    KraftspecRaftMessages(ListenerName listener, Uuid localDirectoryStandIn, String clusterStandIn) {
        this.listener = listener;
        this.localDirectoryStandIn = localDirectoryStandIn;
        this.clusterStandIn = clusterStandIn;
    }

    /**
     * The message as its receiver reads it at {@code version}: written and read back (as Kafka's
     * RaftClientTestContext does), so fields the version does not carry take their defaults.
     */
    static ApiMessage roundTrip(ApiMessage message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(message.size(cache, version));
        message.write(new ByteBufferAccessor(buffer), cache, version);
        buffer.flip();
        try {
            ApiMessage copy = message.getClass().getDeclaredConstructor().newInstance();
            copy.read(new ByteBufferAccessor(buffer), version);
            return copy;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    static short latest(ApiMessage message) {
        return ApiKeys.forId(message.apiKey()).latestVersion();
    }

    // ------------------------------------------------------------------------------------------
    // scalars

    static Errors error(JsonNode value, String path) {
        if (value == null || value.isNull()) return Errors.NONE;
        if (value.isInt()) return Errors.forCode((short) value.asInt());
        try {
            return Errors.valueOf(value.asText());
        } catch (IllegalArgumentException e) {
            throw new HarnessError(path + ": unknown error name " + value);
        }
    }

    static String errorName(short code) {
        return Errors.forCode(code).name();
    }

    static Uuid uuid(JsonNode value) {
        return value == null || value.isNull() ? Uuid.ZERO_UUID : Uuid.fromString(value.asText());
    }

    /** A directory id as the trace states it: none (zero) or the local node's stand-in is null. */
    JsonNode directory(Uuid id) {
        if (id == null || Uuid.ZERO_UUID.equals(id) || id.equals(localDirectoryStandIn)) return NODES.nullNode();
        return NODES.textNode(id.toString());
    }

    JsonNode cluster(String id) {
        if (id == null || id.equals(clusterStandIn)) return NODES.nullNode();
        return NODES.textNode(id);
    }

    static int intField(JsonNode message, String name, int otherwise) {
        JsonNode value = message.get(name);
        return value == null || value.isNull() ? otherwise : value.asInt();
    }

    static long longField(JsonNode message, String name, long otherwise) {
        JsonNode value = message.get(name);
        return value == null || value.isNull() ? otherwise : value.asLong();
    }

    static String stringField(JsonNode message, String name) {
        JsonNode value = message.get(name);
        return value == null || value.isNull() ? null : value.asText();
    }

    static TopicPartition topicPartition(JsonNode message) {
        JsonNode tp = message.get("topic_partition");
        if (tp == null || tp.isNull()) return METADATA_PARTITION;
        return new TopicPartition(tp.get(0).asText(), tp.get(1).asInt());
    }

    static ArrayNode topicPartitionJson(String topic, int partition) {
        ArrayNode tp = NODES.arrayNode();
        tp.add(topic);
        tp.add(partition);
        return tp;
    }

    // ------------------------------------------------------------------------------------------
    // endpoints: "LISTENER://host:port"

    record Endpoint(String listener, String host, int port) {
        static Endpoint parse(String text, String path) {
            int scheme = text.indexOf("://");
            int colon = text.lastIndexOf(':');
            if (scheme <= 0 || colon <= scheme + 2) throw new HarnessError(path + ": not LISTENER://host:port: " + text);
            try {
                return new Endpoint(text.substring(0, scheme), text.substring(scheme + 3, colon),
                    Integer.parseInt(text.substring(colon + 1)));
            } catch (NumberFormatException e) {
                throw new HarnessError(path + ": not LISTENER://host:port: " + text);
            }
        }

        InetSocketAddress address() {
            return InetSocketAddress.createUnresolved(host, port);
        }
    }

    String endpoint(String listenerName, String host, int port) {
        return listenerName + "://" + host + ":" + port;
    }

    /** A leader's endpoint in a response: responses carry host and port on the request's listener only. */
    Endpoint responseEndpoint(JsonNode endpoints, String path) {
        if (endpoints == null || endpoints.isNull() || endpoints.isEmpty()) return null;
        if (endpoints.size() > 1) {
            throw new HarnessError(path + ": a response carries one endpoint per node (Kafka's NodeEndpoints); "
                + "the trace states " + endpoints.size());
        }
        Endpoint e = Endpoint.parse(endpoints.get(0).asText(), path);
        if (!e.listener().equals(listener.value())) {
            throw new HarnessError(path + ": a response's endpoint is on the request's listener "
                + listener.value() + ", the trace states " + e.listener());
        }
        return e;
    }

    // ------------------------------------------------------------------------------------------
    // log entries <-> record batches (a batch runs from an entry that starts one up to the next such entry)

    /** Whether a log entry starts a batch: it does unless it states {@code "starts_batch": false}. */
    static boolean startsBatch(JsonNode entry, String path) {
        JsonNode flag = entry.get("starts_batch");
        if (flag == null || flag.isNull()) return true;
        if (!flag.isBoolean()) throw new HarnessError(path + ".starts_batch: expected true or false, not " + flag);
        return flag.booleanValue();
    }

    /** A control record is stated as an object, a data record as any other JSON value. */
    static boolean isControl(JsonNode entry) {
        JsonNode record = entry.get("record");
        return record != null && record.isObject();
    }

    /**
     * The entries {@code from} (inclusive) to {@code to} (exclusive) as one batch at {@code offset}, of the first
     * entry's epoch and kind; a later entry of another epoch or kind is a {@link HarnessError}, since one of Kafka's
     * batches has a single leader epoch and is either a control batch or a data batch.
     */
    static MemoryRecords entriesBatch(JsonNode entries, int from, int to, long offset, long timestamp, String path) {
        int epoch = entries.get(from).path("epoch").asInt();
        boolean control = isControl(entries.get(from));
        for (int i = from + 1; i < to; i++) {
            JsonNode entry = entries.get(i);
            if (entry.path("epoch").asInt() != epoch) {
                throw new HarnessError(path + "[" + i + "]: continues a batch of epoch " + epoch + " with epoch "
                    + entry.path("epoch").asInt() + " (a batch has one epoch)");
            }
            if (isControl(entry) != control) {
                throw new HarnessError(path + "[" + i + "]: continues a " + (control ? "control" : "data")
                    + " batch with a " + (control ? "data" : "control") + " record (a batch holds one kind)");
            }
        }
        return control ? controlBatch(entries, from, to, offset, timestamp, epoch, path)
            : dataBatch(entries, from, to, offset, timestamp, epoch);
    }

    /** A data batch of the entries' records, each one's JSON text as a SimpleRecord's value. */
    private static MemoryRecords dataBatch(JsonNode entries, int from, int to, long offset, long timestamp,
                                           int epoch) {
        SimpleRecord[] records = new SimpleRecord[to - from];
        for (int i = from; i < to; i++) {
            JsonNode record = entries.get(i).get("record");
            String text = record == null ? "null" : record.toString();
            records[i - from] = new SimpleRecord(timestamp, null, text.getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withRecords(offset, Compression.NONE, epoch, records);
    }

    /**
     * A control batch of the entries' records, built the way {@code LeaderState.appendStartOfEpochControlRecords}
     * builds its one (a {@code MemoryRecordsBuilder} as {@code LeaderState.createControlRecordsBuilder} makes it,
     * uncompressed, each record appended by the builder's control append for its type).
     */
    private static MemoryRecords controlBatch(JsonNode entries, int from, int to, long offset, long timestamp,
                                              int epoch, String path) {
        ByteBuffer buffer = ByteBuffer.allocate(1024); // the builder's stream grows past it when it must
        try (MemoryRecordsBuilder builder = new MemoryRecordsBuilder(buffer, RecordBatch.CURRENT_MAGIC_VALUE,
                Compression.NONE, TimestampType.CREATE_TIME, offset, timestamp, RecordBatch.NO_PRODUCER_ID,
                RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE, false, true, epoch, buffer.capacity())) {
            for (int i = from; i < to; i++) {
                appendControl(builder, entries.get(i).get("record"), timestamp, path + "[" + i + "]");
            }
            return builder.build();
        }
    }

    /** One control record as {@code MemoryRecordsBuilder}'s append for its type writes it. */
    private static void appendControl(MemoryRecordsBuilder builder, JsonNode record, long timestamp, String path) {
        short version = (short) intField(record, "version", 0);
        switch (record.path("type").asText()) {
            case "KRaftVersionRecord" -> builder.appendKRaftVersionMessage(timestamp, new KRaftVersionRecord()
                .setVersion(version)
                .setKRaftVersion((short) record.path("kraft_version").asInt()));
            case "VotersRecord" -> builder.appendVotersMessage(timestamp,
                votersRecord(record.get("voters"), version, path + ".record.voters"));
            case "LeaderChangeMessage" -> builder.appendLeaderChangeMessage(timestamp, new LeaderChangeMessage()
                .setVersion(version)
                .setLeaderId(record.path("leader_id").asInt())
                .setVoters(voters(record.get("voters")))
                .setGrantingVoters(voters(record.get("granting_voters"))));
            default -> throw new HarnessError(path + ": unknown control record " + record);
        }
    }

    /**
     * A VotersRecord of the trace's voters ({@code [{"id", "directory_id", "listeners": ["NAME://host:port"],
     * "kraft_version_range": [min, max]}]}); a voter without {@code kraft_version_range} supports 0 to 1, as a
     * Kafka 4.x node states it, and one without {@code listeners} listens on {@code CONTROLLER://controllerID:9093}
     * (the bootstrap voters of a formatted node).
     */
    static VotersRecord votersRecord(JsonNode voters, short version, String path) {
        if (voters == null || !voters.isArray()) throw new HarnessError(path + ": expected an array of voters");
        List<VotersRecord.Voter> list = new ArrayList<>();
        for (int i = 0; i < voters.size(); i++) {
            JsonNode v = voters.get(i);
            String where = path + "[" + i + "]";
            VotersRecord.EndpointCollection endpoints = new VotersRecord.EndpointCollection();
            List<String> texts = new ArrayList<>();
            JsonNode given = v.get("listeners");
            if (given == null || given.isNull()) {
                texts.add("CONTROLLER://controller" + v.path("id").asInt() + ":9093");
            } else {
                given.forEach(text -> texts.add(text.asText()));
            }
            for (String text : texts) {
                Endpoint e = Endpoint.parse(text, where + ".listeners");
                endpoints.add(new VotersRecord.Endpoint().setName(e.listener()).setHost(e.host()).setPort(e.port()));
            }
            JsonNode range = v.get("kraft_version_range");
            short min = range == null || range.isNull() ? KRaftVersion.KRAFT_VERSION_0.featureLevel()
                : (short) range.get(0).asInt();
            short max = range == null || range.isNull() ? KRaftVersion.KRAFT_VERSION_1.featureLevel()
                : (short) range.get(1).asInt();
            list.add(new VotersRecord.Voter()
                .setVoterId(v.path("id").asInt())
                .setVoterDirectoryId(uuid(v.get("directory_id")))
                .setEndpoints(endpoints)
                .setKRaftVersionFeature(new VotersRecord.KRaftVersionFeature()
                    .setMinSupportedVersion(min).setMaxSupportedVersion(max)));
        }
        return new VotersRecord().setVersion(version).setVoters(list);
    }

    /**
     * A VotersRecord's voters as the trace states them, ascending by id (Kafka writes a voter set's map order), each
     * one's endpoints by listener name (Kafka writes an {@code Endpoints} hash map's order, and every reader,
     * {@code Endpoints.fromVotersRecordEndpoints}, puts them into a hash map again).
     */
    static ArrayNode votersJson(VotersRecord record) {
        ArrayNode voters = NODES.arrayNode();
        record.voters().stream().sorted(java.util.Comparator.comparingInt(VotersRecord.Voter::voterId)).forEach(v -> {
            ObjectNode voter = voters.addObject();
            voter.put("id", v.voterId());
            voter.set("directory_id", Uuid.ZERO_UUID.equals(v.voterDirectoryId()) ? NODES.nullNode()
                : NODES.textNode(v.voterDirectoryId().toString()));
            ArrayNode listeners = voter.putArray("listeners");
            v.endpoints().stream().sorted(java.util.Comparator.comparing(VotersRecord.Endpoint::name))
                .forEach(e -> listeners.add(e.name() + "://" + e.host() + ":" + e.port()));
            voter.putArray("kraft_version_range").add(v.kRaftVersionFeature().minSupportedVersion())
                .add(v.kRaftVersionFeature().maxSupportedVersion());
        });
        return voters;
    }

    private static List<LeaderChangeMessage.Voter> voters(JsonNode ids) {
        List<LeaderChangeMessage.Voter> voters = new ArrayList<>();
        if (ids != null) ids.forEach(id -> voters.add(new LeaderChangeMessage.Voter().setVoterId(id.asInt())));
        return voters;
    }

    /**
     * Log entries as consecutive batches from {@code baseOffset}, in one MemoryRecords: the first entry starts a
     * batch, and each later one starts another unless it continues the batch of the entry before it
     * ({@link #startsBatch}).
     */
    static MemoryRecords entriesAsRecords(JsonNode entries, long baseOffset, long timestamp, String path) {
        if (entries == null || entries.isNull() || entries.isEmpty()) return MemoryRecords.EMPTY;
        List<ByteBuffer> buffers = new ArrayList<>();
        int size = 0;
        int from = 0;
        for (int i = 1; i <= entries.size(); i++) {
            if (i < entries.size() && !startsBatch(entries.get(i), path + "[" + i + "]")) continue;
            ByteBuffer buffer = entriesBatch(entries, from, i, baseOffset + from, timestamp, path).buffer();
            buffers.add(buffer);
            size += buffer.remaining();
            from = i;
        }
        ByteBuffer all = ByteBuffer.allocate(size);
        for (ByteBuffer b : buffers) all.put(b.duplicate());
        all.flip();
        return MemoryRecords.readableRecords(all);
    }

    static ObjectNode entryJson(int epoch, boolean control, Record record) {
        ObjectNode entry = NODES.objectNode();
        entry.put("epoch", epoch);
        if (control) {
            ControlRecordType type = ControlRecordType.parse(record.key());
            if (type == ControlRecordType.KRAFT_VERSION) {
                KRaftVersionRecord message = ControlRecordUtils.deserializeKRaftVersionRecord(record);
                ObjectNode value = entry.putObject("record");
                value.put("type", "KRaftVersionRecord");
                value.put("kraft_version", (int) message.kRaftVersion());
                value.put("version", (int) message.version());
                return entry;
            }
            if (type == ControlRecordType.KRAFT_VOTERS) {
                VotersRecord message = ControlRecordUtils.deserializeVotersRecord(record);
                ObjectNode value = entry.putObject("record");
                value.put("type", "VotersRecord");
                value.set("voters", votersJson(message));
                value.put("version", (int) message.version());
                return entry;
            }
            if (type != ControlRecordType.LEADER_CHANGE) {
                throw new HarnessError("a control record of type " + type + " has no trace form");
            }
            LeaderChangeMessage message = ControlRecordUtils.deserializeLeaderChangeMessage(record);
            ObjectNode value = entry.putObject("record");
            value.put("type", "LeaderChangeMessage");
            value.put("leader_id", message.leaderId());
            // voter sets: Kafka lists them in a hash set's order (LeaderState keeps Set.copyOf(grantingVoters)),
            // the trace format in ascending id order
            ArrayNode voters = value.putArray("voters");
            message.voters().stream().map(LeaderChangeMessage.Voter::voterId).sorted().forEach(voters::add);
            ArrayNode granting = value.putArray("granting_voters");
            message.grantingVoters().stream().map(LeaderChangeMessage.Voter::voterId).sorted().forEach(granting::add);
            value.put("version", (int) message.version());
        } else {
            entry.set("record", dataValue(record.value()));
        }
        return entry;
    }

    static JsonNode dataValue(ByteBuffer value) {
        if (value == null) return NODES.nullNode();
        byte[] bytes = new byte[value.remaining()];
        value.duplicate().get(bytes);
        try {
            return JSON.readTree(new String(bytes, StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new HarnessError("a data record that is not a trace value: " + new String(bytes, StandardCharsets.UTF_8));
        }
    }

    /** Records as log entries, each record of a batch but its first stating {@code "starts_batch": false}. */
    static ArrayNode recordsJson(BaseRecords base) {
        ArrayNode entries = NODES.arrayNode();
        if (!(base instanceof Records records)) return entries;
        for (RecordBatch batch : records.batches()) {
            boolean first = true;
            for (Record record : batch) {
                ObjectNode entry = entryJson(batch.partitionLeaderEpoch(), batch.isControlBatch(), record);
                if (!first) entry.put("starts_batch", false);
                entries.add(entry);
                first = false;
            }
        }
        return entries;
    }

    // ------------------------------------------------------------------------------------------
    // trace inputs -> Kafka's inbound messages

    VoteRequestData voteRequest(JsonNode m) {
        TopicPartition tp = topicPartition(m);
        return new VoteRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setVoterId(intField(m, "voter_id", -1))
            .setTopics(List.of(new VoteRequestData.TopicData()
                .setTopicName(tp.topic())
                .setPartitions(List.of(new VoteRequestData.PartitionData()
                    .setPartitionIndex(tp.partition())
                    .setReplicaEpoch(m.path("replica_epoch").asInt())
                    .setReplicaId(m.path("replica_id").asInt())
                    .setReplicaDirectoryId(uuid(m.get("replica_directory_id")))
                    .setVoterDirectoryId(uuid(m.get("voter_directory_id")))
                    .setLastOffsetEpoch(m.path("last_offset_epoch").asInt())
                    .setLastOffset(m.path("last_offset").asLong())
                    .setPreVote(m.path("pre_vote").asBoolean(false))))));
    }

    FetchRequestData fetchRequest(JsonNode m, int maxBytes) {
        TopicPartition tp = topicPartition(m);
        String topicId = stringField(m, "topic_id");
        return new FetchRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setReplicaState(new FetchRequestData.ReplicaState().setReplicaId(m.path("replica_id").asInt()))
            .setMaxWaitMs(intField(m, "max_wait_ms", 0))
            .setMaxBytes(maxBytes)
            .setTopics(List.of(new FetchRequestData.FetchTopic()
                .setTopic(tp.topic())
                .setTopicId(topicId == null ? Uuid.METADATA_TOPIC_ID : Uuid.fromString(topicId))
                .setPartitions(List.of(new FetchRequestData.FetchPartition()
                    .setPartition(tp.partition())
                    .setCurrentLeaderEpoch(m.path("current_leader_epoch").asInt())
                    .setFetchOffset(m.path("fetch_offset").asLong())
                    .setLastFetchedEpoch(m.path("last_fetched_epoch").asInt())
                    .setReplicaDirectoryId(uuid(m.get("replica_directory_id")))
                    .setHighWatermark(longField(m, "high_watermark", -1))))));
    }

    /** A FetchSnapshot request of the stated {@code topic_partition} (absent: the metadata log's; null: no topic). */
    FetchSnapshotRequestData fetchSnapshotRequest(JsonNode m) {
        JsonNode id = m.get("snapshot_id");
        FetchSnapshotRequestData data = new FetchSnapshotRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setReplicaId(m.path("replica_id").asInt())
            .setMaxBytes(m.path("max_bytes").asInt());
        JsonNode named = m.get("topic_partition");
        if (named != null && named.isNull()) return data;
        TopicPartition tp = topicPartition(m);
        return data
            .setTopics(List.of(new FetchSnapshotRequestData.TopicSnapshot()
                .setName(tp.topic())
                .setPartitions(List.of(new FetchSnapshotRequestData.PartitionSnapshot()
                    .setPartition(tp.partition())
                    .setCurrentLeaderEpoch(m.path("current_leader_epoch").asInt())
                    .setSnapshotId(new FetchSnapshotRequestData.SnapshotId()
                        .setEndOffset(id.get(0).asLong())
                        .setEpoch(id.get(1).asInt()))
                    .setPosition(m.path("position").asLong())
                    .setReplicaDirectoryId(uuid(m.get("replica_directory_id")))))));
    }

    /**
     * A FetchSnapshot response whose chunk is {@code chunk} bytes from {@code position} of {@link #snapshotBytes}'s
     * snapshot of the stated id and size (the trace states the chunk's length, not its bytes), whose first batch holds
     * the {@code control_records} the chunk from byte 0 states (kept for the snapshot's later chunks).
     */
    FetchSnapshotResponseData fetchSnapshotResponse(JsonNode m, String path) {
        int leader = intField(m, "leader_id", -1);
        JsonNode id = m.get("snapshot_id");
        long end = id == null || id.isNull() ? -1 : id.get(0).asLong();
        int epoch = id == null || id.isNull() ? -1 : id.get(1).asInt();
        long size = longField(m, "size", -1);
        long position = longField(m, "position", -1);
        int chunk = intField(m, "chunk", 0);
        SnapshotControl control = position == 0
            ? controlOf(m.get("control_records"), path + ".control_records")
            : fetchedControl.getOrDefault(new OffsetAndEpoch(end, epoch), SnapshotControl.NONE);
        if (position == 0) fetchedControl.put(new OffsetAndEpoch(end, epoch), control);
        MemoryRecords records = MemoryRecords.EMPTY;
        if (chunk > 0) {
            if (end < 0 || epoch < 0 || position < 0 || position + chunk > size) {
                throw new HarnessError(path + ": a chunk of " + chunk + " bytes at " + position + " of snapshot " + id
                    + " of " + size + " bytes");
            }
            ByteBuffer all = snapshotBytes(new OffsetAndEpoch(end, epoch), size, control);
            all.position((int) position);
            all.limit((int) (position + chunk));
            records = MemoryRecords.readableRecords(all.slice());
        }
        FetchSnapshotResponseData.PartitionSnapshot partition = new FetchSnapshotResponseData.PartitionSnapshot()
            .setIndex(METADATA_PARTITION.partition())
            .setErrorCode(error(m.get("partition_error"), path + ".partition_error").code())
            .setSize(size)
            .setPosition(position)
            .setUnalignedRecords(records);
        partition.snapshotId().setEndOffset(end).setEpoch(epoch);
        partition.currentLeader().setLeaderId(leader).setLeaderEpoch(intField(m, "leader_epoch", -1));
        FetchSnapshotResponseData response = new FetchSnapshotResponseData()
            .setErrorCode(error(m.get("error"), path + ".error").code())
            .setTopics(List.of(new FetchSnapshotResponseData.TopicSnapshot()
                .setName(METADATA_PARTITION.topic())
                .setPartitions(List.of(partition))));
        Endpoint e = responseEndpoint(m.get("leader_endpoints"), path + ".leader_endpoints");
        if (e != null) {
            FetchSnapshotResponseData.NodeEndpointCollection nodes = new FetchSnapshotResponseData.NodeEndpointCollection(1);
            nodes.add(new FetchSnapshotResponseData.NodeEndpoint().setNodeId(leader).setHost(e.host()).setPort(e.port()));
            response.setNodeEndpoints(nodes);
        }
        return response;
    }

    // ------------------------------------------------------------------------------------------
    // snapshots of a stated size (the trace states sizes, not bytes)

    /** {@code KafkaRaftClient.MAX_BATCH_SIZE_BYTES}: the batch size of the client's snapshot writers. */
    static final int SNAPSHOT_BATCH_BYTES = 8 * 1024;

    /**
     * What {@code RecordsSnapshotWriter.Builder.build} writes after the header of a snapshot's first batch: a
     * KRaftVersionRecord when the kraft.version is above 0, then the voter set's VotersRecord when there is one
     * ({@code KafkaRaftClient.createSnapshot}: {@code partitionState.kraftVersionAtOffset}, {@code voterSetAtOffset}).
     */
    record SnapshotControl(KRaftVersion kraftVersion, Optional<VoterSet> voters) {
        static final SnapshotControl NONE = new SnapshotControl(KRaftVersion.KRAFT_VERSION_0, Optional.empty());
    }

    /** The control records a trace states for a snapshot's first batch (absent or empty: none). */
    static SnapshotControl controlOf(JsonNode records, String path) {
        if (records == null || records.isNull() || records.isEmpty()) return SnapshotControl.NONE;
        KRaftVersion version = null;
        Optional<VoterSet> voters = Optional.empty();
        for (int i = 0; i < records.size(); i++) {
            JsonNode r = records.get(i);
            String type = r.path("type").asText();
            if (i == 0 && type.equals("KRaftVersionRecord")) {
                version = KRaftVersion.fromFeatureLevel((short) r.path("kraft_version").asInt());
            } else if (i == 1 && type.equals("VotersRecord")) {
                voters = Optional.of(VoterSet.fromVotersRecord(
                    votersRecord(r.get("voters"), (short) intField(r, "version", 0), path + "[1].voters")));
            } else {
                throw new HarnessError(path + ": a snapshot's writer writes a KRaftVersionRecord and then at most a "
                    + "VotersRecord, the trace states " + records);
            }
        }
        if (version == KRaftVersion.KRAFT_VERSION_0) {
            throw new HarnessError(path + ": a kraft.version 0 snapshot's first batch holds no control records");
        }
        return new SnapshotControl(version, voters);
    }

    /**
     * The control records after the header of a snapshot's first batch, as the trace states them (the
     * {@code "record"} of {@link #entryJson}); {@code snapshot} is the whole snapshot or a prefix holding that batch.
     */
    static ArrayNode controlRecordsJson(Records snapshot) {
        ArrayNode out = NODES.arrayNode();
        for (RecordBatch batch : snapshot.batches()) {
            for (Record record : batch) {
                if (batch.isControlBatch()
                    && ControlRecordType.parse(record.key()) != ControlRecordType.SNAPSHOT_HEADER) {
                    out.add(entryJson(batch.partitionLeaderEpoch(), true, record).get("record"));
                }
            }
            break;
        }
        return out;
    }

    /**
     * The data records a snapshot writer with {@code control} (as {@code KafkaRaftClient.createSnapshot} builds it)
     * must be given for the frozen snapshot to hold exactly {@code size} bytes: one filler record, or two where one
     * cannot hit the size (a varint length grows by a byte); a size below an empty snapshot's cannot be written.
     */
    static List<String> fillerFor(long size, SnapshotControl control) {
        OffsetAndEpoch id = new OffsetAndEpoch(1, 0);
        long empty = frozenSize(id, List.of(), control);
        if (size == empty) return List.of();
        for (int first = 0; first <= size; first++) {
            long one = frozenSize(id, List.of("x".repeat(first)), control);
            if (one == size) return List.of("x".repeat(first));
            if (one > size) { // a varint grew past the size: two shorter records may hit it
                for (int a = Math.max(0, first - 4); a <= first; a++) {
                    for (int b = 0; b < 4; b++) {
                        List<String> two = List.of("x".repeat(a), "y".repeat(b));
                        if (frozenSize(id, two, control) == size) return two;
                    }
                }
                break;
            }
        }
        throw new HarnessError("raft: a snapshot of " + size + " bytes cannot be written (an empty one holds " + empty
            + " bytes, one with a record at least " + frozenSize(id, List.of(""), control) + ")");
    }

    private static long frozenSize(OffsetAndEpoch id, List<String> records, SnapshotControl control) {
        return write(id, records, control).remaining();
    }

    /** A snapshot of {@code records} as a client writes it (header and control records, data batch, footer). */
    private static ByteBuffer write(OffsetAndEpoch id, List<String> records, SnapshotControl control) {
        AtomicReference<ByteBuffer> frozen = new AtomicReference<>();
        try (SnapshotWriter<String> writer = snapshotWriter(new MockRawSnapshotWriter(id, frozen::set), control)) {
            if (!records.isEmpty()) writer.append(records);
            writer.freeze();
        }
        return frozen.get();
    }

    static SnapshotWriter<String> snapshotWriter(org.apache.kafka.snapshot.RawSnapshotWriter raw,
                                                 SnapshotControl control) {
        return new RecordsSnapshotWriter.Builder()
            .setLastContainedLogTimestamp(0)
            .setTime(new MockTime(0, 0, 0))
            .setMaxBatchSizeBytes(SNAPSHOT_BATCH_BYTES)
            .setMemoryPool(MemoryPool.NONE)
            .setRawSnapshotWriter(raw)
            .setKraftVersion(control.kraftVersion())
            .setVoterSet(control.voters())
            .build(SERDE);
    }

    /**
     * The bytes of a valid snapshot with id {@code id}, the control records {@code control} and exactly {@code size}
     * bytes (records from {@link #fillerFor}).
     */
    static ByteBuffer snapshotBytes(OffsetAndEpoch id, long size, SnapshotControl control) {
        ByteBuffer bytes = write(id, fillerFor(size, control), control);
        ByteBuffer copy = ByteBuffer.allocate(bytes.remaining());
        copy.put(bytes.duplicate()).flip();
        return copy;
    }

    BeginQuorumEpochRequestData beginQuorumEpochRequest(JsonNode m, String path) {
        TopicPartition tp = topicPartition(m);
        BeginQuorumEpochRequestData.LeaderEndpointCollection endpoints =
            new BeginQuorumEpochRequestData.LeaderEndpointCollection();
        JsonNode given = m.get("leader_endpoints");
        if (given != null && !given.isNull()) {
            for (JsonNode text : given) {
                Endpoint e = Endpoint.parse(text.asText(), path + ".leader_endpoints");
                endpoints.add(new BeginQuorumEpochRequestData.LeaderEndpoint()
                    .setName(e.listener()).setHost(e.host()).setPort(e.port()));
            }
        }
        return new BeginQuorumEpochRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setVoterId(intField(m, "voter_id", -1))
            .setTopics(List.of(new BeginQuorumEpochRequestData.TopicData()
                .setTopicName(tp.topic())
                .setPartitions(List.of(new BeginQuorumEpochRequestData.PartitionData()
                    .setPartitionIndex(tp.partition())
                    .setVoterDirectoryId(uuid(m.get("voter_directory_id")))
                    .setLeaderId(m.path("leader_id").asInt())
                    .setLeaderEpoch(m.path("leader_epoch").asInt())))))
            .setLeaderEndpoints(endpoints);
    }

    /** EndQuorumEpoch v1: the preferred successors as candidates without directory ids (the trace has none). */
    EndQuorumEpochRequestData endQuorumEpochRequest(JsonNode m) {
        TopicPartition tp = topicPartition(m);
        List<Integer> successors = new ArrayList<>();
        List<EndQuorumEpochRequestData.ReplicaInfo> candidates = new ArrayList<>();
        JsonNode given = m.get("preferred_successors");
        if (given != null) {
            for (JsonNode id : given) {
                successors.add(id.asInt());
                candidates.add(new EndQuorumEpochRequestData.ReplicaInfo()
                    .setCandidateId(id.asInt()).setCandidateDirectoryId(Uuid.ZERO_UUID));
            }
        }
        return new EndQuorumEpochRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setTopics(List.of(new EndQuorumEpochRequestData.TopicData()
                .setTopicName(tp.topic())
                .setPartitions(List.of(new EndQuorumEpochRequestData.PartitionData()
                    .setPartitionIndex(tp.partition())
                    .setLeaderId(m.path("leader_id").asInt())
                    .setLeaderEpoch(m.path("leader_epoch").asInt())
                    .setPreferredSuccessors(successors)
                    .setPreferredCandidates(candidates)))));
    }

    static DescribeQuorumRequestData describeQuorumRequest(JsonNode m) {
        TopicPartition tp = topicPartition(m);
        return new DescribeQuorumRequestData()
            .setTopics(List.of(new DescribeQuorumRequestData.TopicData()
                .setTopicName(tp.topic())
                .setPartitions(List.of(new DescribeQuorumRequestData.PartitionData()
                    .setPartitionIndex(tp.partition())))));
    }

    /**
     * UpdateRaftVoter v0 from a voter ({@code RaftUtil.updateVoterRequest}): its id, directory id, listeners and the
     * kraft.version range a Kafka 4.x node supports (0 to 1: the trace does not state it, see the reference's
     * {@code raft.SUPPORTED_KRAFT_VERSIONS}).
     */
    UpdateRaftVoterRequestData updateRaftVoterRequest(JsonNode m, String path) {
        UpdateRaftVoterRequestData.ListenerCollection listeners = new UpdateRaftVoterRequestData.ListenerCollection();
        JsonNode given = m.get("listeners");
        if (given != null && !given.isNull()) {
            for (JsonNode text : given) {
                Endpoint e = Endpoint.parse(text.asText(), path + ".listeners");
                listeners.add(new UpdateRaftVoterRequestData.Listener().setName(e.listener()).setHost(e.host())
                    .setPort(e.port()));
            }
        }
        return new UpdateRaftVoterRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setCurrentLeaderEpoch(intField(m, "current_leader_epoch", -1))
            .setVoterId(intField(m, "voter_id", -1))
            .setVoterDirectoryId(uuid(m.get("voter_directory_id")))
            .setListeners(listeners)
            .setKRaftVersionFeature(new UpdateRaftVoterRequestData.KRaftVersionFeature()
                .setMinSupportedVersion(KRaftVersion.KRAFT_VERSION_0.featureLevel())
                .setMaxSupportedVersion(KRaftVersion.KRAFT_VERSION_1.featureLevel()));
    }

    /** An UpdateRaftVoter answer ({@code RaftUtil.updateVoterResponse}): the leader's endpoint on the listener. */
    UpdateRaftVoterResponseData updateRaftVoterResponse(JsonNode m, String path) {
        UpdateRaftVoterResponseData response = new UpdateRaftVoterResponseData()
            .setErrorCode(error(m.get("error"), path + ".error").code());
        response.currentLeader().setLeaderId(intField(m, "leader_id", -1)).setLeaderEpoch(intField(m, "leader_epoch", -1));
        Endpoint e = responseEndpoint(m.get("leader_endpoints"), path + ".leader_endpoints");
        if (e != null) response.currentLeader().setHost(e.host()).setPort(e.port());
        return response;
    }

    /**
     * AddRaftVoter from an admin client (KIP-853, {@code Admin.addRaftVoter}): the new voter's id, directory id and
     * listeners, and whether to answer only once the VotersRecord commits (v1's {@code AckWhenCommitted}).
     */
    static AddRaftVoterRequestData addRaftVoterRequest(JsonNode m, String path) {
        AddRaftVoterRequestData.ListenerCollection listeners = new AddRaftVoterRequestData.ListenerCollection();
        JsonNode given = m.get("listeners");
        if (given != null && !given.isNull()) {
            for (JsonNode text : given) {
                Endpoint e = Endpoint.parse(text.asText(), path + ".listeners");
                listeners.add(new AddRaftVoterRequestData.Listener().setName(e.listener()).setHost(e.host())
                    .setPort(e.port()));
            }
        }
        return new AddRaftVoterRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setVoterId(intField(m, "voter_id", -1))
            .setVoterDirectoryId(uuid(m.get("voter_directory_id")))
            .setListeners(listeners)
            .setAckWhenCommitted(m.path("ack_when_committed").asBoolean(true));
    }

    /** RemoveRaftVoter from an admin client (KIP-853, {@code Admin.removeRaftVoter}): the voter's id, directory id. */
    static RemoveRaftVoterRequestData removeRaftVoterRequest(JsonNode m) {
        return new RemoveRaftVoterRequestData()
            .setClusterId(stringField(m, "cluster_id"))
            .setVoterId(intField(m, "voter_id", -1))
            .setVoterDirectoryId(uuid(m.get("voter_directory_id")));
    }

    /**
     * The leader's answer to an auto-joining observer's AddRaftVoter or RemoveRaftVoter ({@code api}), as
     * {@code RaftUtil.addVoterResponse} / {@code removeVoterResponse} build it: the error code and message.
     */
    static ApiMessage voterChangeResponse(JsonNode m, String path) {
        Errors error = error(m.get("error"), path + ".error");
        String message = stringField(m, "error_message");
        String api = m.path("api").asText();
        if (api.equals("AddRaftVoter")) {
            return new AddRaftVoterResponseData().setErrorCode(error.code()).setErrorMessage(message);
        }
        if (api.equals("RemoveRaftVoter")) {
            return new RemoveRaftVoterResponseData().setErrorCode(error.code()).setErrorMessage(message);
        }
        throw new HarnessError(path + ".api: expected AddRaftVoter or RemoveRaftVoter, got " + m.get("api"));
    }

    /**
     * The ApiVersions answer of a voter being added: its error and, unless {@code kraft_version_range} is null, the
     * {@code kraft.version} supported feature (the only one the leader reads:
     * {@code KafkaRaftClient.handleApiVersionsResponse}).
     */
    static ApiVersionsResponseData apiVersionsResponse(JsonNode m, String path) {
        ApiVersionsResponseData response = new ApiVersionsResponseData()
            .setErrorCode(error(m.get("error"), path + ".error").code());
        JsonNode range = m.get("kraft_version_range");
        if (range != null && !range.isNull()) {
            if (!range.isArray() || range.size() != 2) {
                throw new HarnessError(path + ".kraft_version_range: expected [min, max]");
            }
            ApiVersionsResponseData.SupportedFeatureKeyCollection features =
                new ApiVersionsResponseData.SupportedFeatureKeyCollection();
            features.add(new ApiVersionsResponseData.SupportedFeatureKey().setName(KRaftVersion.FEATURE_NAME)
                .setMinVersion((short) range.get(0).asInt()).setMaxVersion((short) range.get(1).asInt()));
            response.setSupportedFeatures(features);
        }
        return response;
    }

    VoteResponseData voteResponse(JsonNode m, String path) {
        int leader = intField(m, "leader_id", -1);
        VoteResponseData response = new VoteResponseData()
            .setErrorCode(error(m.get("error"), path + ".error").code())
            .setTopics(List.of(new VoteResponseData.TopicData()
                .setTopicName(METADATA_PARTITION.topic())
                .setPartitions(List.of(new VoteResponseData.PartitionData()
                    .setPartitionIndex(METADATA_PARTITION.partition())
                    .setErrorCode(error(m.get("partition_error"), path + ".partition_error").code())
                    .setLeaderId(leader)
                    .setLeaderEpoch(intField(m, "leader_epoch", -1))
                    .setVoteGranted(m.path("vote_granted").asBoolean(false))))));
        Endpoint e = responseEndpoint(m.get("leader_endpoints"), path + ".leader_endpoints");
        if (e != null) {
            VoteResponseData.NodeEndpointCollection nodes = new VoteResponseData.NodeEndpointCollection(1);
            nodes.add(new VoteResponseData.NodeEndpoint().setNodeId(leader).setHost(e.host()).setPort(e.port()));
            response.setNodeEndpoints(nodes);
        }
        return response;
    }

    /** A FetchResponse whose records start at {@code baseOffset} (the fetcher's log end: it asked from there). */
    FetchResponseData fetchResponse(JsonNode m, long baseOffset, long timestamp, String path) {
        int leader = intField(m, "leader_id", -1);
        JsonNode diverging = m.get("diverging_epoch");
        JsonNode snapshotId = m.get("snapshot_id");
        long recordsOffset = longField(m, "records_offset", baseOffset);
        FetchResponseData.PartitionData partition = new FetchResponseData.PartitionData()
            .setPartitionIndex(METADATA_PARTITION.partition())
            .setErrorCode(error(m.get("partition_error"), path + ".partition_error").code())
            .setHighWatermark(longField(m, "high_watermark", -1))
            .setLogStartOffset(longField(m, "log_start_offset", 0))
            .setDivergingEpoch(new FetchResponseData.EpochEndOffset()
                .setEpoch(diverging == null || diverging.isNull() ? -1 : diverging.get(0).asInt())
                .setEndOffset(diverging == null || diverging.isNull() ? -1 : diverging.get(1).asLong()))
            .setSnapshotId(new FetchResponseData.SnapshotId()
                .setEndOffset(snapshotId == null || snapshotId.isNull() ? -1 : snapshotId.get(0).asLong())
                .setEpoch(snapshotId == null || snapshotId.isNull() ? -1 : snapshotId.get(1).asInt()))
            .setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch()
                .setLeaderId(leader)
                .setLeaderEpoch(intField(m, "leader_epoch", -1)))
            .setRecords(entriesAsRecords(m.get("records"), recordsOffset, timestamp, path + ".records"));
        FetchResponseData response = new FetchResponseData()
            .setErrorCode(error(m.get("error"), path + ".error").code())
            .setResponses(List.of(new FetchResponseData.FetchableTopicResponse()
                .setTopic(METADATA_PARTITION.topic())
                .setTopicId(Uuid.METADATA_TOPIC_ID)
                .setPartitions(List.of(partition))));
        Endpoint e = responseEndpoint(m.get("leader_endpoints"), path + ".leader_endpoints");
        if (e != null) {
            FetchResponseData.NodeEndpointCollection nodes = new FetchResponseData.NodeEndpointCollection(1);
            nodes.add(new FetchResponseData.NodeEndpoint().setNodeId(leader).setHost(e.host()).setPort(e.port()));
            response.setNodeEndpoints(nodes);
        }
        return response;
    }

    ApiMessage quorumEpochResponse(JsonNode m, String path) {
        String api = m.path("api").asText();
        int leader = intField(m, "leader_id", -1);
        short error = error(m.get("error"), path + ".error").code();
        short partitionError = error(m.get("partition_error"), path + ".partition_error").code();
        int epoch = intField(m, "leader_epoch", -1);
        Endpoint e = responseEndpoint(m.get("leader_endpoints"), path + ".leader_endpoints");
        if (api.equals("BeginQuorumEpoch")) {
            BeginQuorumEpochResponseData response = new BeginQuorumEpochResponseData()
                .setErrorCode(error)
                .setTopics(List.of(new BeginQuorumEpochResponseData.TopicData()
                    .setTopicName(METADATA_PARTITION.topic())
                    .setPartitions(List.of(new BeginQuorumEpochResponseData.PartitionData()
                        .setPartitionIndex(METADATA_PARTITION.partition())
                        .setErrorCode(partitionError).setLeaderId(leader).setLeaderEpoch(epoch)))));
            if (e != null) {
                BeginQuorumEpochResponseData.NodeEndpointCollection nodes =
                    new BeginQuorumEpochResponseData.NodeEndpointCollection(1);
                nodes.add(new BeginQuorumEpochResponseData.NodeEndpoint()
                    .setNodeId(leader).setHost(e.host()).setPort(e.port()));
                response.setNodeEndpoints(nodes);
            }
            return response;
        }
        if (api.equals("EndQuorumEpoch")) {
            EndQuorumEpochResponseData response = new EndQuorumEpochResponseData()
                .setErrorCode(error)
                .setTopics(List.of(new EndQuorumEpochResponseData.TopicData()
                    .setTopicName(METADATA_PARTITION.topic())
                    .setPartitions(List.of(new EndQuorumEpochResponseData.PartitionData()
                        .setPartitionIndex(METADATA_PARTITION.partition())
                        .setErrorCode(partitionError).setLeaderId(leader).setLeaderEpoch(epoch)))));
            if (e != null) {
                EndQuorumEpochResponseData.NodeEndpointCollection nodes =
                    new EndQuorumEpochResponseData.NodeEndpointCollection(1);
                nodes.add(new EndQuorumEpochResponseData.NodeEndpoint()
                    .setNodeId(leader).setHost(e.host()).setPort(e.port()));
                response.setNodeEndpoints(nodes);
            }
            return response;
        }
        throw new HarnessError(path + ".api: expected BeginQuorumEpoch or EndQuorumEpoch, got " + api);
    }

    // ------------------------------------------------------------------------------------------
    // Kafka's outbound messages -> trace sends

    /** A request client {@code source} sent (destination, type, fields, correlation id). */
    ObjectNode request(int destination, int source, int correlationId, ApiMessage data) {
        ObjectNode send = NODES.objectNode();
        send.put("destination", destination);
        if (data instanceof VoteRequestData r) {
            VoteRequestData.TopicData topic = r.topics().get(0);
            VoteRequestData.PartitionData p = topic.partitions().get(0);
            send.put("type", "VoteRequest");
            send.put("replica_id", p.replicaId());
            send.put("replica_epoch", p.replicaEpoch());
            send.put("last_offset_epoch", p.lastOffsetEpoch());
            send.put("last_offset", p.lastOffset());
            send.put("pre_vote", p.preVote());
            send.set("replica_directory_id", directory(p.replicaDirectoryId()));
            send.set("voter_id", r.voterId() < 0 ? NODES.nullNode() : NODES.numberNode(r.voterId()));
            send.set("voter_directory_id", directory(p.voterDirectoryId()));
            send.set("cluster_id", cluster(r.clusterId()));
            send.set("topic_partition", topicPartitionJson(topic.topicName(), p.partitionIndex()));
        } else if (data instanceof FetchRequestData r) {
            FetchRequestData.FetchTopic topic = r.topics().get(0);
            FetchRequestData.FetchPartition p = topic.partitions().get(0);
            send.put("type", "FetchRequest");
            send.put("replica_id", r.replicaState().replicaId());
            send.put("current_leader_epoch", p.currentLeaderEpoch());
            send.put("fetch_offset", p.fetchOffset());
            send.put("last_fetched_epoch", p.lastFetchedEpoch());
            send.put("max_wait_ms", r.maxWaitMs());
            send.put("high_watermark", p.highWatermark());
            send.set("replica_directory_id", directory(p.replicaDirectoryId()));
            send.set("cluster_id", cluster(r.clusterId()));
            send.put("topic_id", topic.topicId().toString());
            send.set("topic_partition", topicPartitionJson(topic.topic(), p.partition()));
        } else if (data instanceof FetchSnapshotRequestData r) {
            FetchSnapshotRequestData.TopicSnapshot topic = r.topics().get(0);
            FetchSnapshotRequestData.PartitionSnapshot p = topic.partitions().get(0);
            send.put("type", "FetchSnapshotRequest");
            send.put("replica_id", r.replicaId());
            send.put("current_leader_epoch", p.currentLeaderEpoch());
            ArrayNode id = send.putArray("snapshot_id");
            id.add(p.snapshotId().endOffset());
            id.add(p.snapshotId().epoch());
            send.put("position", p.position());
            send.put("max_bytes", r.maxBytes());
            send.set("replica_directory_id", directory(p.replicaDirectoryId()));
            send.set("cluster_id", cluster(r.clusterId()));
            send.set("topic_partition", topicPartitionJson(topic.name(), p.partition()));
        } else if (data instanceof BeginQuorumEpochRequestData r) {
            BeginQuorumEpochRequestData.TopicData topic = r.topics().get(0);
            BeginQuorumEpochRequestData.PartitionData p = topic.partitions().get(0);
            send.put("type", "BeginQuorumEpochRequest");
            send.put("leader_id", p.leaderId());
            send.put("leader_epoch", p.leaderEpoch());
            ArrayNode endpoints = send.putArray("leader_endpoints");
            r.leaderEndpoints().forEach(e -> endpoints.add(endpoint(e.name(), e.host(), e.port())));
            send.set("voter_id", r.voterId() < 0 ? NODES.nullNode() : NODES.numberNode(r.voterId()));
            send.set("voter_directory_id", directory(p.voterDirectoryId()));
            send.set("cluster_id", cluster(r.clusterId()));
            send.set("topic_partition", topicPartitionJson(topic.topicName(), p.partitionIndex()));
        } else if (data instanceof EndQuorumEpochRequestData r) {
            EndQuorumEpochRequestData.TopicData topic = r.topics().get(0);
            EndQuorumEpochRequestData.PartitionData p = topic.partitions().get(0);
            send.put("type", "EndQuorumEpochRequest");
            send.put("leader_id", p.leaderId());
            send.put("leader_epoch", p.leaderEpoch());
            ArrayNode successors = send.putArray("preferred_successors");
            p.preferredSuccessors().forEach(successors::add);
            send.set("cluster_id", cluster(r.clusterId()));
            send.set("topic_partition", topicPartitionJson(topic.topicName(), p.partitionIndex()));
        } else if (data instanceof UpdateRaftVoterRequestData r) {
            // KIP-853: a kraft.version-0 voter tells each new leader its endpoints (pollFollowerAsVoter)
            send.put("type", "UpdateRaftVoterRequest");
            send.set("cluster_id", cluster(r.clusterId()));
            send.put("current_leader_epoch", r.currentLeaderEpoch());
            send.put("voter_id", r.voterId());
            send.set("voter_directory_id", directory(r.voterDirectoryId()));
            ArrayNode listeners = send.putArray("listeners");
            r.listeners().forEach(l -> listeners.add(endpoint(l.name(), l.host(), l.port())));
        } else if (data instanceof ApiVersionsRequestData) {
            // KIP-853: the leader asks a voter being added for its supported kraft.version (AddVoterHandler)
            send.put("type", "ApiVersionsRequest");
        } else if (data instanceof AddRaftVoterRequestData r) {
            // KIP-853: an auto-joining observer asks the leader to add it (pollFollowerAsObserver ->
            // buildAddVoterRequest); its TimeoutMs (the client's request timeout) is read by no KafkaRaftClient
            // (handleAddVoterRequest answers by its own timer), so the trace has no field for it
            send.put("type", "AddRaftVoterRequest");
            send.put("voter_id", r.voterId());
            send.set("voter_directory_id", directory(r.voterDirectoryId()));
            ArrayNode listeners = send.putArray("listeners");
            r.listeners().forEach(l -> listeners.add(endpoint(l.name(), l.host(), l.port())));
            send.put("ack_when_committed", r.ackWhenCommitted());
            send.set("cluster_id", cluster(r.clusterId()));
            send.put("source", source);
        } else if (data instanceof RemoveRaftVoterRequestData r) {
            // KIP-853: an auto-joining observer asks the leader to remove its id's old voter (buildRemoveVoterRequest)
            send.put("type", "RemoveRaftVoterRequest");
            send.put("voter_id", r.voterId());
            send.set("voter_directory_id", directory(r.voterDirectoryId()));
            send.set("cluster_id", cluster(r.clusterId()));
            send.put("source", source);
        } else {
            send.put("type", data.getClass().getSimpleName().replaceAll("Data$", ""));
        }
        send.put("correlation_id", correlationId);
        return send;
    }

    private void leaderEndpoints(ObjectNode send, int leader, Iterable<? extends Object> nodes) {
        ArrayNode endpoints = send.putArray("leader_endpoints");
        for (Object node : nodes) {
            int id;
            String host;
            int port;
            if (node instanceof VoteResponseData.NodeEndpoint n) {
                id = n.nodeId(); host = n.host(); port = n.port();
            } else if (node instanceof FetchResponseData.NodeEndpoint n) {
                id = n.nodeId(); host = n.host(); port = n.port();
            } else if (node instanceof BeginQuorumEpochResponseData.NodeEndpoint n) {
                id = n.nodeId(); host = n.host(); port = n.port();
            } else if (node instanceof EndQuorumEpochResponseData.NodeEndpoint n) {
                id = n.nodeId(); host = n.host(); port = n.port();
            } else {
                continue;
            }
            if (id == leader) endpoints.add(endpoint(listener.value(), host, port));
        }
    }

    /** A response the client gave to an inbound request, as the message the trace says the node sent. */
    ObjectNode response(int destination, int localId, int correlationId, ApiMessage data) {
        ObjectNode send = NODES.objectNode();
        send.put("destination", destination);
        if (data instanceof VoteResponseData r) {
            send.put("type", "VoteResponse");
            send.put("source", localId);
            send.put("error", errorName(r.errorCode()));
            VoteResponseData.PartitionData p = r.topics().isEmpty() ? new VoteResponseData.PartitionData()
                : r.topics().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            send.put("leader_epoch", p.leaderEpoch());
            send.put("leader_id", p.leaderId());
            send.put("vote_granted", p.voteGranted());
            leaderEndpoints(send, p.leaderId(), r.nodeEndpoints());
            send.put("correlation_id", correlationId);
        } else if (data instanceof FetchResponseData r) {
            send.put("type", "FetchResponse");
            send.put("source", localId);
            send.put("error", errorName(r.errorCode()));
            FetchResponseData.PartitionData p = r.responses().isEmpty() ? new FetchResponseData.PartitionData()
                : r.responses().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            send.put("leader_epoch", p.currentLeader().leaderEpoch());
            send.put("leader_id", p.currentLeader().leaderId());
            leaderEndpoints(send, p.currentLeader().leaderId(), r.nodeEndpoints());
            send.put("high_watermark", p.highWatermark());
            send.put("log_start_offset", p.logStartOffset());
            ArrayNode diverging = send.putArray("diverging_epoch");
            diverging.add(p.divergingEpoch().epoch());
            diverging.add(p.divergingEpoch().endOffset());
            if (p.snapshotId().epoch() != -1 || p.snapshotId().endOffset() != -1) { // stated only when asked for
                ArrayNode snapshot = send.putArray("snapshot_id");
                snapshot.add(p.snapshotId().endOffset());
                snapshot.add(p.snapshotId().epoch());
            }
            send.set("records", recordsJson(p.records()));
            send.put("correlation_id", correlationId);
        } else if (data instanceof FetchSnapshotResponseData r) {
            send.put("type", "FetchSnapshotResponse");
            send.put("source", localId);
            send.put("error", errorName(r.errorCode()));
            FetchSnapshotResponseData.PartitionSnapshot p = r.topics().isEmpty()
                ? new FetchSnapshotResponseData.PartitionSnapshot() : r.topics().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            send.put("leader_epoch", p.currentLeader().leaderEpoch());
            send.put("leader_id", p.currentLeader().leaderId());
            ArrayNode endpoints = send.putArray("leader_endpoints");
            for (FetchSnapshotResponseData.NodeEndpoint n : r.nodeEndpoints()) {
                if (n.nodeId() == p.currentLeader().leaderId()) endpoints.add(endpoint(listener.value(), n.host(), n.port()));
            }
            ArrayNode id = send.putArray("snapshot_id");
            id.add(p.snapshotId().endOffset());
            id.add(p.snapshotId().epoch());
            send.put("size", p.size());
            send.put("position", p.position());
            send.put("chunk", p.unalignedRecords() == null ? 0 : p.unalignedRecords().sizeInBytes());
            send.put("correlation_id", correlationId);
        } else if (data instanceof BeginQuorumEpochResponseData r) {
            send.put("type", "QuorumEpochResponse");
            send.put("source", localId);
            send.put("api", "BeginQuorumEpoch");
            send.put("error", errorName(r.errorCode()));
            BeginQuorumEpochResponseData.PartitionData p = r.topics().isEmpty()
                ? new BeginQuorumEpochResponseData.PartitionData() : r.topics().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            send.put("leader_epoch", p.leaderEpoch());
            send.put("leader_id", p.leaderId());
            leaderEndpoints(send, p.leaderId(), r.nodeEndpoints());
            send.put("correlation_id", correlationId);
        } else if (data instanceof EndQuorumEpochResponseData r) {
            send.put("type", "QuorumEpochResponse");
            send.put("source", localId);
            send.put("api", "EndQuorumEpoch");
            send.put("error", errorName(r.errorCode()));
            EndQuorumEpochResponseData.PartitionData p = r.topics().isEmpty()
                ? new EndQuorumEpochResponseData.PartitionData() : r.topics().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            send.put("leader_epoch", p.leaderEpoch());
            send.put("leader_id", p.leaderId());
            leaderEndpoints(send, p.leaderId(), r.nodeEndpoints());
            send.put("correlation_id", correlationId);
        } else if (data instanceof UpdateRaftVoterResponseData r) {
            send.put("type", "UpdateRaftVoterResponse");
            send.put("source", localId);
            send.put("error", errorName(r.errorCode()));
            send.put("leader_epoch", r.currentLeader().leaderEpoch());
            send.put("leader_id", r.currentLeader().leaderId());
            ArrayNode endpoints = send.putArray("leader_endpoints");
            if (!r.currentLeader().host().isEmpty()) {
                endpoints.add(endpoint(listener.value(), r.currentLeader().host(), r.currentLeader().port()));
            }
            send.put("correlation_id", correlationId);
        } else if (data instanceof AddRaftVoterResponseData r) {
            voterChangeResponse(send, "AddRaftVoter", r.errorCode(), r.errorMessage(), correlationId);
        } else if (data instanceof RemoveRaftVoterResponseData r) {
            voterChangeResponse(send, "RemoveRaftVoter", r.errorCode(), r.errorMessage(), correlationId);
        } else if (data instanceof DescribeQuorumResponseData r) {
            send.put("type", "DescribeQuorumResponse");
            send.put("error", errorName(r.errorCode()));
            DescribeQuorumResponseData.PartitionData p = r.topics().isEmpty()
                ? new DescribeQuorumResponseData.PartitionData() : r.topics().get(0).partitions().get(0);
            send.put("partition_error", errorName(p.errorCode()));
            String message = p.errorMessage() != null ? p.errorMessage() : r.errorMessage();
            if (message == null) send.putNull("error_message"); else send.put("error_message", message);
            send.put("leader_id", p.leaderId());
            send.put("leader_epoch", p.leaderEpoch());
            send.put("high_watermark", p.highWatermark());
            send.set("current_voters", replicas(p.currentVoters()));
            send.set("observers", replicas(p.observers()));
            ArrayNode nodes = send.putArray("nodes");
            for (DescribeQuorumResponseData.Node node : r.nodes()) {
                ArrayNode pair = nodes.addArray();
                pair.add(node.nodeId());
                ArrayNode listeners = pair.addArray();
                node.listeners().forEach(l -> listeners.add(endpoint(l.name(), l.host(), l.port())));
            }
        } else {
            throw new HarnessError("the client answered with a " + data.getClass().getSimpleName()
                + ", which the raft trace format has no type for");
        }
        return send;
    }

    /** An AddRaftVoter or RemoveRaftVoter answer to the admin client: the API, error code and message (null: none). */
    private static void voterChangeResponse(ObjectNode send, String api, short error, String message,
                                            int correlationId) {
        send.put("type", "VoterChangeResponse");
        send.put("api", api);
        send.put("error", errorName(error));
        if (message == null) send.putNull("error_message"); else send.put("error_message", message);
        send.put("correlation_id", correlationId);
    }

    /** A Kafka timestamp on the trace's clock (-1, "never", stays -1). */
    static long traceTime(long kafkaMs) {
        return kafkaMs < 0 ? kafkaMs : kafkaMs - KraftspecRaftSession.CLOCK_BASE;
    }

    private static ArrayNode replicas(List<DescribeQuorumResponseData.ReplicaState> states) {
        ArrayNode replicas = NODES.arrayNode();
        for (DescribeQuorumResponseData.ReplicaState s : states) {
            ObjectNode r = replicas.addObject();
            r.put("replica_id", s.replicaId());
            r.put("log_end_offset", s.logEndOffset());
            r.put("last_fetch_timestamp", traceTime(s.lastFetchTimestamp()));
            r.put("last_caught_up_timestamp", traceTime(s.lastCaughtUpTimestamp()));
        }
        return replicas;
    }
}
