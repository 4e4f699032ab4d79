package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;

import kafka.cluster.DelayedOperations;
import kafka.cluster.Partition;

import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.clients.NodeApiVersions;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AlterPartitionRequest;
import org.apache.kafka.common.requests.AlterPartitionResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.MetadataCache;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.server.common.ControllerRequestCompletionHandler;
import org.apache.kafka.server.common.NodeToControllerChannelManager;
import org.apache.kafka.server.common.RequestLocal;
import org.apache.kafka.server.partition.AlterPartitionListener;
import org.apache.kafka.server.partition.PartitionState;
import org.apache.kafka.server.partition.PendingPartitionChange;
import org.apache.kafka.server.replica.Replica;
import org.apache.kafka.server.replica.ReplicaState;
import org.apache.kafka.server.storage.log.FetchIsolation;
import org.apache.kafka.server.storage.log.FetchParams;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.UnifiedLog;
import org.apache.kafka.storage.internals.log.VerificationGuard;
import org.apache.kafka.storage.log.metrics.BrokerTopicStats;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * The partition leader on the broker: Kafka 4.3's {@code kafka.cluster.Partition} (Scala core), one per leader state
 * of a trace ({@code broker_id}, {@code topic_id}, {@code partition_id}), with what {@code ReplicaManager} gives it:
 *
 * <ul>
 *   <li>its log, a real {@link UnifiedLog} in a temporary directory holding {@code log_end_offset} records and
 *   {@code high_watermark}, with the topic's {@code min.insync.replicas} ({@code become_leader}'s argument);
 *   {@code Partition.setLog} gives it to the partition, so no {@code LogManager} is needed. Every record is a batch
 *   of its own (the initial ones and each one {@code append} adds), so that every offset a trace names is a batch
 *   boundary, as a follower's log end offset always is (Kafka rounds a high watermark inside a batch down to the
 *   batch's start when it reads its position);</li>
 *   <li>its metadata cache: the broker registrations the controller ({@link ClusterControlManager}) holds when the
 *   trace says the broker learns them ({@code become_leader}, {@code update_leader_metadata},
 *   {@code update_broker_metadata}), answered as {@code KRaftMetadataCache.getAliveBrokerEpoch} /
 *   {@code isBrokerFenced} / {@code isBrokerShuttingDown} answer them from an image;</li>
 *   <li>its AlterPartition path: Kafka's own {@link DefaultAlterPartitionManager} over a channel that keeps the
 *   request it sends (a {@code follower_fetch} or {@code maybe_shrink_isr} answer's {@code proposal}, a
 *   {@code handle_alter_partition_result}'s {@code resend}) and delivers the trace's {@code result} as the
 *   controller's response;</li>
 *   <li>a clock at the trace's {@code now}; no delayed produce/fetch/delete operations
 *   ({@link DelayedOperations} with nothing waiting).</li>
 * </ul>
 * Inputs: {@code become_leader} = a new {@code Partition} on a new log, then {@code makeLeader} with the controller's
 * registration; {@code update_leader_metadata} = {@code makeLeader} again with the current registration;
 * {@code update_broker_metadata} = the cache refreshed; {@code stop_leading} = the leader state dropped;
 * {@code append} = {@code appendRecordsToLeader} (acks 1); {@code follower_fetch} = {@code fetchRecords} from the
 * follower at {@code fetch_offset} with its broker epoch; {@code maybe_shrink_isr} = {@code maybeShrinkIsr}.
 *
 * <p>Sets: the leader's ISR is a {@code Set.copyOf} ({@code CommittedPartitionState}), whose iteration order Java
 * draws per JVM run, and the AlterPartition it proposes lists that set; the post-state and the proposals list such
 * members ascending (traces/FORMAT.md).
 */
final class PartitionLeaders implements PartitionLeaderSide {
    private static final Path BASE;
    private static final KafkaScheduler SCHEDULER = new KafkaScheduler(1, true, "kraftspec-partition-");
    private static final BrokerTopicStats TOPIC_STATS = new BrokerTopicStats();
    private static final LogDirFailureChannel DIR_FAILURES = new LogDirFailureChannel(1);
    private static final ProducerStateManagerConfig PRODUCER_STATE = new ProducerStateManagerConfig(86_400_000, false);
    private static final AtomicLong LOGS = new AtomicLong();

    static {
        try {
            BASE = Files.createTempDirectory("kraftspec-partition-logs-");
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        SCHEDULER.startup();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(BASE.toFile())));
    }

    /** The trace's clock, set before every leader input. */
    static final class TraceTime implements Time {
        private volatile long now;

        void set(long ms) {
            now = ms;
        }

        @Override
        public long milliseconds() {
            return now;
        }

        @Override
        public long nanoseconds() {
            return now * 1_000_000L;
        }

        @Override
        public void sleep(long ms) {
            now += ms;
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long timeoutMs) {
            throw new UnsupportedOperationException("the partition harness never waits");
        }
    }

    /** The channel to the controller: keeps each AlterPartition request; the trace answers it. */
    private static final class ControllerChannel implements NodeToControllerChannelManager {
        AlterPartitionRequest.Builder sent;
        ControllerRequestCompletionHandler callback;
        final List<AlterPartitionRequestData> fresh = new ArrayList<>();

        @Override
        public void start() {
        }

        @Override
        public void shutdown() {
        }

        @Override
        public Optional<NodeApiVersions> controllerApiVersions() {
            return Optional.empty();
        }

        @Override
        public void sendRequest(AbstractRequest.Builder<? extends AbstractRequest> request,
                                ControllerRequestCompletionHandler handler) {
            sent = (AlterPartitionRequest.Builder) request;
            callback = handler;
            fresh.add(sent.build(ApiKeys.ALTER_PARTITION.latestVersion()).data());
        }

        @Override
        public long getTimeoutMs() {
            return Long.MAX_VALUE;
        }
    }

    private static final class NoDelayedOperations extends DelayedOperations {
        NoDelayedOperations(TopicPartition tp) {
            super(scala.Option.empty(), tp, null, null, null, null);
        }

        @Override
        public void checkAndCompleteAll() {
        }

        @Override
        public int numDelayedDelete() {
            return 0;
        }
    }

    private static final class NoListener implements AlterPartitionListener {
        @Override
        public void markIsrExpand() {
        }

        @Override
        public void markIsrShrink() {
        }

        @Override
        public void markFailed() {
        }
    }

    /** A broker process's AlterPartition path for one partition: Kafka's manager over the channel to the
     * controller. It outlives leader states (new metadata, stop_leading) and goes with the process (a restart). */
    private static final class Slot {
        final ControllerChannel channel = new ControllerChannel();
        final KraftspecAlterPartitionManager alterPartition;

        Slot(int brokerId, long brokerEpoch, Time time) {
            alterPartition = new KraftspecAlterPartitionManager(channel, SCHEDULER, time, brokerId, brokerEpoch);
        }
    }

    /** One broker's leader state: its Partition, log, metadata cache and AlterPartition path. */
    private static final class Leader {
        final int brokerId;
        final Uuid topicId;
        final int partitionId;
        final Partition partition;
        final UnifiedLog log;
        final File dir;
        final Slot slot;
        final Map<Integer, BrokerRegistration> brokers;

        Leader(int brokerId, Uuid topicId, int partitionId, Partition partition, UnifiedLog log, File dir,
               Slot slot, Map<Integer, BrokerRegistration> brokers) {
            this.brokerId = brokerId;
            this.topicId = topicId;
            this.partitionId = partitionId;
            this.partition = partition;
            this.log = log;
            this.dir = dir;
            this.slot = slot;
            this.brokers = brokers;
        }

        void close() {
            log.close();
            delete(dir);
        }
    }

    private final ClusterControlManager clusterControl;
    private final ReplicationControlManager replicationControl;
    private final PartitionTraceIds ids;
    private final TraceTime time = new TraceTime();
    private final TreeMap<String, Leader> leaders = new TreeMap<>();
    /** Leader states the broker has left (makeFollower): kept until its process restarts, a late answer may reach them. */
    private final List<Leader> retired = new ArrayList<>();
    private final Map<String, Slot> slots = new HashMap<>();

    PartitionLeaders(ClusterControlManager clusterControl, ReplicationControlManager replicationControl,
                     PartitionTraceIds ids) {
        this.clusterControl = clusterControl;
        this.replicationControl = replicationControl;
        this.ids = ids;
    }

    // ---------------------------------------------------------------- inputs

    /** Applies a broker-side input; its response (or null for none). */
    @Override
    public ObjectNode step(String action, JsonNode input) throws Exception {
        int brokerId = input.path("broker_id").asInt();
        String topic = input.path("topic_id").asText();
        int partitionId = input.path("partition_id").asInt();
        String key = key(brokerId, topic, partitionId);
        if (input.has("now")) time.set(input.get("now").asLong());
        switch (action) {
            case "become_leader":
                becomeLeader(key, brokerId, ids.kafka(topic), partitionId, input);
                return null;
            case "stop_leading":
                retire(leaders.remove(key));
                return null;
            case "handle_alter_partition_result":
                if (!leaders.containsKey(key)) {
                    // the broker no longer leads: its AlterPartitionManager still takes the answer to its request
                    Slot slot = slots.get(key);
                    if (slot == null || slot.channel.callback == null) {
                        throw new IllegalArgumentException("broker " + brokerId + " neither leads " + topic + ":"
                            + partitionId + " nor has an AlterPartition for it");
                    }
                    slot.channel.fresh.clear();
                    answer(slot, ids.kafka(topic), partitionId, input.path("result"));
                    return proposal("resend", slot);
                }
                break;
            default:
                break;
        }
        Leader leader = leaders.get(key);
        if (leader == null) {
            throw new IllegalArgumentException("broker " + brokerId + " holds no leader state for " + topic + ":"
                + partitionId);
        }
        switch (action) {
            case "update_leader_metadata":
                learnBrokers(leader);
                leader.partition.makeLeader(registration(leader.topicId, partitionId), false, null,
                    scala.Option.apply(leader.topicId), scala.Option.empty());
                return null;
            case "update_broker_metadata":
                learnBrokers(leader);
                return null;
            case "append": {
                int count = input.path("count").asInt();
                if (count < 1) {
                    throw new HarnessError("append of " + count + " records: a produce request carries at least one");
                }
                for (int i = 0; i < count; i++) { // one batch per record: every trace offset is a batch boundary
                    leader.partition.appendRecordsToLeader(KraftspecAppendedRecords.of(1), AppendOrigin.CLIENT, 1,
                        RequestLocal.noCaching(), VerificationGuard.SENTINEL, (short) 0);
                }
                return null;
            }
            case "follower_fetch": {
                leader.slot.channel.fresh.clear();
                FetchParams params = new FetchParams(input.path("follower").asInt(), input.path("broker_epoch").asLong(),
                    0, 1, 1 << 20, FetchIsolation.LOG_END, Optional.empty());
                FetchRequest.PartitionData data = new FetchRequest.PartitionData(leader.topicId,
                    input.path("fetch_offset").asLong(), 0, 1 << 20, Optional.empty(), Optional.empty());
                leader.partition.fetchRecords(params, data, time.milliseconds(), 1 << 20, true, true);
                return proposal("proposal", leader.slot);
            }
            case "maybe_shrink_isr":
                leader.slot.channel.fresh.clear();
                leader.partition.maybeShrinkIsr();
                return proposal("proposal", leader.slot);
            case "handle_alter_partition_result":
                leader.slot.channel.fresh.clear();
                answer(leader.slot, leader.topicId, leader.partitionId, input.path("result"));
                return proposal("resend", leader.slot);
            default:
                throw new HarnessError("unknown partition leader action '" + action + "'");
        }
    }

    private void becomeLeader(String key, int brokerId, Uuid topicId, int partitionId, JsonNode input) throws IOException {
        PartitionRegistration registration = registration(topicId, partitionId);
        BrokerRegistration broker = clusterControl.registration(brokerId);
        if (broker == null) throw new IllegalArgumentException("broker " + brokerId + " is not registered");
        String topicName = replicationControl.getTopic(topicId).name();
        TopicPartition tp = new TopicPartition(topicName, partitionId);
        retire(leaders.remove(key));
        File dir = BASE.resolve("log-" + LOGS.incrementAndGet()).resolve(topicName + "-" + partitionId).toFile();
        Map<String, Object> config = new HashMap<>();
        config.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, input.path("min_insync_replicas").asInt());
        config.put(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, 4096);
        UnifiedLog log = UnifiedLog.create(dir, new LogConfig(config), 0L, 0L, SCHEDULER, TOPIC_STATS, time,
            60_000, PRODUCER_STATE, 600_000, DIR_FAILURES, true, Optional.of(topicId));
        long logEndOffset = input.path("log_end_offset").asLong();
        for (long i = 0; i < logEndOffset; i++) log.appendAsLeader(KraftspecAppendedRecords.of(1), 0); // one batch per record
        log.updateHighWatermark(input.path("high_watermark").asLong());
        long epoch = broker.epoch();
        Slot slot = slots.computeIfAbsent(key, k -> new Slot(brokerId, epoch, time));
        Map<Integer, BrokerRegistration> cache = new HashMap<>();
        Partition.removeMetrics(tp); // its gauges would hold the previous Partition of this name
        Partition partition = new Partition(tp, input.path("replica_lag_time_max_ms").asLong(30_000L), brokerId,
            () -> epoch, time, new NoListener(), new NoDelayedOperations(tp), metadataCache(cache), null,
            slot.alterPartition.manager, scala.Option.apply(topicId));
        Leader leader = new Leader(brokerId, topicId, partitionId, partition, log, dir.getParentFile(), slot, cache);
        partition.setLog(log, false);
        learnBrokers(leader);
        partition.makeLeader(registration, false, null, scala.Option.apply(topicId), scala.Option.empty());
        leaders.put(key, leader);
    }

    private PartitionRegistration registration(Uuid topicId, int partitionId) {
        PartitionRegistration registration = replicationControl.getPartition(topicId, partitionId);
        if (registration == null) {
            throw new IllegalArgumentException("the controller has no partition " + ids.trace(topicId) + ":" + partitionId);
        }
        return registration;
    }

    /** The broker learns the controller's broker registrations (its metadata cache's image). */
    private void learnBrokers(Leader leader) {
        leader.brokers.clear();
        leader.brokers.putAll(clusterControl.brokerRegistrations());
    }

    /** {@code KRaftMetadataCache}'s answers on an image holding these registrations; nothing else is asked. */
    private static MetadataCache metadataCache(Map<Integer, BrokerRegistration> brokers) {
        return (MetadataCache) Proxy.newProxyInstance(MetadataCache.class.getClassLoader(),
            new Class<?>[] {MetadataCache.class}, (proxy, method, args) -> {
                switch (method.getName()) {
                    case "getAliveBrokerEpoch": {
                        BrokerRegistration r = brokers.get((Integer) args[0]);
                        return r == null || r.fenced() ? Optional.empty() : Optional.of(r.epoch());
                    }
                    case "isBrokerFenced": {
                        BrokerRegistration r = brokers.get((Integer) args[0]);
                        return r != null && r.fenced();
                    }
                    case "isBrokerShuttingDown": {
                        BrokerRegistration r = brokers.get((Integer) args[0]);
                        return r != null && r.inControlledShutdown();
                    }
                    case "hasAliveBroker": {
                        BrokerRegistration r = brokers.get((Integer) args[0]);
                        return r != null && !r.fenced();
                    }
                    case "toString":
                        return "kraftspec partition leader metadata cache " + brokers.keySet();
                    case "hashCode":
                        return System.identityHashCode(proxy);
                    case "equals":
                        return proxy == args[0];
                    default:
                        throw new UnsupportedOperationException("the partition harness's metadata cache does not answer "
                            + method.getName());
                }
            });
    }

    /** The broker leaves the leader state ({@code makeFollower}, as ReplicaManager does on new metadata); its
     * Partition stays with the process, so that a late answer to its request finds it a follower. */
    private void retire(Leader leader) {
        if (leader == null) return;
        PartitionRegistration registration = replicationControl.getPartition(leader.topicId, leader.partitionId);
        if (registration != null) {
            leader.partition.makeFollower(registration, false, null, scala.Option.apply(leader.topicId), scala.Option.empty());
        }
        retired.add(leader);
    }

    /** The controller's answer to the in-flight AlterPartition, as {@code DefaultAlterPartitionManager} reads it. */
    private void answer(Slot slot, Uuid topicId, int partitionId, JsonNode result) {
        ControllerChannel channel = slot.channel;
        if (channel.callback == null) return; // nothing in flight: nothing to answer
        ControllerRequestCompletionHandler callback = channel.callback;
        AlterPartitionRequest.Builder sent = channel.sent;
        channel.callback = null;
        channel.sent = null;
        AlterPartitionResponseData.PartitionData partition = new AlterPartitionResponseData.PartitionData().
            setPartitionIndex(result.path("partition_index").asInt(partitionId)).
            setErrorCode(error(result.path("error_code")).code()).
            setLeaderId(result.path("leader_id").asInt(0)).
            setLeaderEpoch(result.path("leader_epoch").asInt(0)).
            setLeaderRecoveryState((byte) result.path("leader_recovery_state").asInt(0)).
            setPartitionEpoch(result.path("partition_epoch").asInt(0));
        for (JsonNode id : result.path("isr")) partition.isr().add(id.asInt());
        AlterPartitionResponseData data = new AlterPartitionResponseData();
        data.topics().add(new AlterPartitionResponseData.TopicData().setTopicId(topicId).
            setPartitions(new ArrayList<>(List.of(partition))));
        short version = ApiKeys.ALTER_PARTITION.latestVersion();
        RequestHeader header = new RequestHeader(ApiKeys.ALTER_PARTITION, version, "kraftspec", 0);
        callback.onComplete(new ClientResponse(header, callback, "controller", time.milliseconds(), time.milliseconds(),
            false, null, null, new AlterPartitionResponse(data)));
        if (sent == null) throw new IllegalStateException("an answer without a request");
    }

    private static Errors error(JsonNode code) {
        if (code.isTextual()) return Errors.valueOf(code.asText());
        return Errors.forCode((short) code.asInt());
    }

    /** The partition data of the AlterPartition this step sent, as the trace's proposal, or null. */
    private ObjectNode proposal(String name, Slot slot) {
        ObjectNode response = PartitionSession.JSON.createObjectNode();
        List<AlterPartitionRequestData> fresh = slot.channel.fresh;
        if (fresh.isEmpty()) {
            response.putNull(name);
            return response;
        }
        if (fresh.size() > 1) throw new IllegalStateException("more than one AlterPartition sent in one step");
        AlterPartitionRequestData.PartitionData p = fresh.get(0).topics().get(0).partitions().get(0);
        ObjectNode json = response.putObject(name);
        json.put("partition_index", p.partitionIndex());
        json.put("leader_epoch", p.leaderEpoch());
        ArrayNode members = json.putArray("new_isr_with_epochs");
        p.newIsrWithEpochs().stream().sorted(Comparator.comparingInt(AlterPartitionRequestData.BrokerState::brokerId)).
            forEach(b -> members.addArray().add(b.brokerId()).add(b.brokerEpoch()));
        json.put("partition_epoch", p.partitionEpoch());
        json.put("leader_recovery_state", p.leaderRecoveryState());
        return response;
    }

    // ---------------------------------------------------------------- post-state

    @Override
    public ObjectNode post() {
        ObjectNode all = PartitionSession.JSON.createObjectNode();
        leaders.forEach((key, leader) -> {
            Partition p = leader.partition;
            ObjectNode json = all.putObject(key);
            json.put("leader_epoch", p.getLeaderEpoch());
            json.put("partition_epoch", p.getPartitionEpoch());
            PartitionState state = p.partitionState();
            putSorted(json.putArray("isr"), state.isr());
            json.put("high_watermark", leader.log.highWatermark());
            json.put("log_end_offset", leader.log.logEndOffset());
            scala.Option<Object> start = p.leaderEpochStartOffsetOpt();
            json.put("leader_epoch_start_offset", start.isDefined() ? (Long) start.get() : -1L);
            ObjectNode followers = json.putObject("followers");
            TreeMap<Integer, ReplicaState> replicas = new TreeMap<>();
            scala.collection.Iterator<Replica> it = p.remoteReplicas().iterator();
            while (it.hasNext()) {
                Replica r = it.next();
                replicas.put(r.brokerId(), r.stateSnapshot());
            }
            replicas.forEach((id, r) -> {
                ObjectNode f = followers.putObject(Integer.toString(id));
                f.put("log_end_offset", r.logEndOffset());
                f.put("broker_epoch", r.brokerEpoch().orElse(-2L));
            });
            ObjectNode eligible = json.putObject("eligible_brokers");
            new TreeMap<>(leader.brokers).forEach((id, r) -> {
                if (!r.fenced() && !r.inControlledShutdown()) eligible.put(Integer.toString(id), r.epoch());
            });
            if (state instanceof PendingPartitionChange pending) {
                ObjectNode json2 = json.putObject("pending");
                TreeSet<Integer> proposed = new TreeSet<>();
                pending.sentLeaderAndIsr().isrWithBrokerEpoch().forEach(b -> proposed.add(b.brokerId()));
                putSorted(json2.putArray("proposed_isr"), proposed);
                putSorted(json2.putArray("maximal_isr"), state.maximalIsr());
            } else {
                json.putNull("pending");
            }
        });
        return all;
    }

    /** The trace's clock ({@code advance_clock}; the initial state's leaders leave it at 0). */
    @Override
    public void setClock(long now) {
        time.set(now);
    }

    /** A broker restarted (a new incarnation): its process holds no leader state any more. */
    @Override
    public void dropBroker(int brokerId) {
        leaders.values().removeIf(leader -> {
            if (leader.brokerId != brokerId) return false;
            leader.close();
            return true;
        });
        retired.removeIf(leader -> {
            if (leader.brokerId != brokerId) return false;
            leader.close();
            return true;
        });
        slots.keySet().removeIf(key -> key.startsWith(brokerId + ":"));
    }

    @Override
    public void close() {
        leaders.values().forEach(Leader::close);
        leaders.clear();
        retired.forEach(Leader::close);
        retired.clear();
        slots.clear();
    }

    private static void putSorted(ArrayNode array, java.util.Collection<Integer> values) {
        new TreeSet<>(values).forEach(array::add);
    }

    static String key(int brokerId, String topicId, int partitionId) {
        return brokerId + ":" + topicId + ":" + partitionId;
    }

    private static void delete(File file) {
        File[] children = file.listFiles();
        if (children != null) for (File child : children) delete(child);
        file.delete();
    }
}
