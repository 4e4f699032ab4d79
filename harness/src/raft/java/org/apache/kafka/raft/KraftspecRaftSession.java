package org.apache.kafka.raft;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;
import io.kraftspec.harness.Session;

import org.apache.kafka.common.Node;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.errors.InvalidUpdateVersionException;
import org.apache.kafka.raft.errors.NotLeaderException;
import org.apache.kafka.raft.internals.KRaftControlRecordStateMachine;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.memory.MemoryPool;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.common.utils.MockTime;
import org.apache.kafka.snapshot.SnapshotReader;
import org.apache.kafka.snapshot.RecordsSnapshotWriter;
import org.apache.kafka.snapshot.SnapshotWriter;
import org.apache.kafka.snapshot.Snapshots;
import org.apache.kafka.server.common.Feature;
import org.apache.kafka.server.common.OffsetAndEpoch;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The {@code raft} component: one KRaft quorum node run by Apache Kafka's own {@link KafkaRaftClient}, driven by
 * the inputs of a kraftspec raft trace (FORMAT.md, "The raft component"), with every collaborator the client takes
 * supplied by Kafka's raft test utilities (the {@code kafka-raft} test jar) and controlled by the harness:
 *
 * <ul>
 *   <li>the replicated log: {@link MockLog} (durable across restarts; a restart is {@link MockLog#reopen()}, which
 *   drops what was not flushed, then {@code truncateToLatestSnapshot} as the production log runs it when opened,
 *   {@code KafkaRaftLog.createLog}), whose {@code read} returns whole batches instead of MockLog's two (the first one
 *   whole whatever its size, then more while the records read stay within {@code fetch_max_records}, the
 *   reference's stand-in for {@code quorum.fetch.max.bytes}; {@link TraceLog}), and whose
 *   {@code endOffsetForEpoch} answers an epoch below the first cached one as the production log does
 *   ({@link TraceLog#endOffsetForEpoch}). The log's batches are Kafka's own and the trace states them: an entry
 *   with {@code "starts_batch": false} belongs to the batch of the entry before it, any other entry opens a batch.
 *   A leader's accumulator writes one batch per drain (the records of one append; the start-of-epoch
 *   LeaderChange, KRaftVersion and Voters records; an upgrade's KRaftVersion and Voters records), and the harness
 *   reports each batch of the log and of a Fetch answer that way;</li>
 *   <li>the quorum-state file: {@link MockQuorumStateStore} (written at the node's kraft.version), durable across
 *   restarts;</li>
 *   <li>the network: a {@link MockNetworkChannel} whose sends are recorded in order (its correlation-id counter,
 *   from 1, survives restarts as the reference's numbering does); responses to inbound requests are read off each
 *   request's completion future; inbound messages are handed to the client's own dispatch
 *   ({@code handleInboundMessage}) at the input's time. Inbound messages and the client's responses are written
 *   and read back at their RPC version (as {@code RaftClientTestContext} does), so a field the version lacks takes
 *   its default; the client's own requests are reported as it built them (a Fetch's topic name included);</li>
 *   <li>the clock: {@code MockTime} (kafka-clients' test jar), set to the input's {@code now} plus
 *   {@link #CLOCK_BASE}: Kafka's code takes its clock for epoch milliseconds (a never-fetched replica's
 *   {@code lastFetchTimestamp} -1 counts as long ago only when {@code now - (-1)} is large, as in
 *   {@code LeaderState.needToSendBeginQuorumRequests}; Kafka's own tests start MockTime at the wall clock), so the
 *   trace's clock, which starts at 0, is shifted; timestamps Kafka reports (DescribeQuorum) are shifted back.
 *   {@link MockExpirationService} expires parked fetches when the clock reaches their deadline;</li>
 *   <li>the random source: a {@link MockableRandom} that returns the trace's draws: {@code jitter % bound} to the
 *   election timer ({@code QuorumState.randomElectionTimeoutMs}) and {@code bootstrap % bound} to
 *   {@code RequestManager.findReadyBootstrapServer}; any other draw is a harness error;</li>
 *   <li>the configuration: the trace's {@code QuorumConfig} timeouts, {@code quorum.retry.backoff.ms} from
 *   {@code retry_backoff_ms} (Kafka's default 20), {@code quorum.append.linger.ms} 0 (an append is drained by the
 *   poll after it), {@code canBecomeVoter} the trace's {@code can_become_voter} (a kraft.version 1 node's,
 *   default true, as a controller's {@code KafkaRaftManager} passes; false at kraft.version 0),
 *   {@code controller.quorum.auto.join.enable} the trace's {@code auto_join} (default false: a kraft.version 1
 *   observer that can become a voter then sends the leader AddRaftVoter or RemoveRaftVoter itself,
 *   {@code pollFollowerAsObserver}); at kraft.version 0
 *   the static voters ({@code controller.quorum.voters}); at kraft.version 1 ({@code "kraft_version": 1}) a node as
 *   {@code kafka-storage format --initial-controllers} leaves it: the bootstrap checkpoint (0, 0) that
 *   {@code Formatter.writeDynamicQuorumSnapshot} writes (kraft.version 1 and the {@code bootstrap_voters}), its own
 *   {@code listeners} (the first one the quorum's), {@code controller.quorum.voters} empty and
 *   {@code controller.quorum.bootstrap.servers} the bootstrap voters' addresses in id order, which Kafka's client
 *   numbers -2, -3, ...; the quorum-state file is written at kraft.version 1 (data version 1);</li>
 *   <li>the listener: each incarnation registers one {@link ListenerView} (a state machine that reads and closes
 *   every batch reader at once), reported as the post-state's {@code listener}: the end of the committed records
 *   handed to {@code handleCommit} (or loaded by {@code handleLoadSnapshot}), the last {@code handleLeaderChange}
 *   and the id of the last snapshot loaded ({@code loaded_snapshot}). A listener's committed read (any
 *   size: {@code Integer.MAX_VALUE} bytes) is not capped at {@code fetch_max_records}: the production log reads up
 *   to the high watermark within a segment.</li>
 * </ul>
 *
 * <p>How each input is applied (the reference's {@code raft.step}: the input, then one {@code poll}):
 * <ul>
 *   <li>{@code vote_request}, {@code fetch_request}, {@code begin_quorum_epoch_request},
 *   {@code end_quorum_epoch_request}, {@code describe_quorum_request}, {@code fetch_snapshot_request},
 *   {@code update_raft_voter_request} (the sender's kraft.version range 0 to 1, as a Kafka 4.x node states it),
 *   {@code add_raft_voter_request} and {@code remove_raft_voter_request} (from an admin client {@code source}): the
 *   message as Kafka's RPC data at the latest version (DescribeQuorum: the message's {@code version}), handed to
 *   the client as an inbound request with the message's correlation id; then {@code poll()}. The response (now, or
 *   later for a parked Fetch or a voter change waiting for its VotersRecord to commit) goes to the request's
 *   sender.</li>
 *   <li>{@code vote_response}, {@code fetch_response}, {@code quorum_epoch_response}, {@code fetch_snapshot_response},
 *   {@code update_raft_voter_response}, {@code api_versions_response} (its {@code kraft.version} range as the
 *   supported feature, none when null), {@code voter_change_response} (the auto-joining observer's answer: an
 *   AddRaftVoter or RemoveRaftVoter response after its {@code api}): an inbound response from
 *   {@code source} with the message's correlation id, or without one the id of the last request the client sent
 *   to {@code source} (what it has outstanding there, if anything); where the input states the request it answers
 *   ({@code answers}, added by the Python hook from the trace's own sends), the id the client gave that same request
 *   instead, or one it never gave ({@link #answeredCorrelationId}), reported as {@code delivered_correlation_id};
 *   Fetch records are laid from the client's log end offset in the batches their {@code starts_batch} marks
 *   state (a batch of mixed epochs or of both control and data records is a {@link HarnessError}); then
 *   {@code poll()}.</li>
 *   <li>{@code tick}: {@code poll()}. {@code append}: {@code prepareAppend(epoch, records)} and
 *   {@code schedulePreparedAppend()}, then {@code poll()} (which drains and flushes); a
 *   {@code NotLeaderException} answers {@code last_offset: null} without a poll, as the reference does.
 *   {@code upgrade_kraft_version}: {@code upgradeKRaftVersion(epoch, version, validate_only)}'s glue (the leader's
 *   {@code maybeAppendUpgradedKRaftVersion} against {@code partitionState.lastKraftVersion} and {@code lastVoterSet}),
 *   answering what it returned ({@code upgraded}), then {@code poll()}; an exception answers its simple name
 *   ({@code error}) without a poll, as the reference does.
 *   {@code create_snapshot}: {@code createSnapshot(id, 0)} and, if given a writer, the filler records that make the
 *   frozen snapshot {@code size} bytes with the control records the writer puts after its header (the kraft.version
 *   and voter set of {@code partitionState} at the snapshot's last offset); then {@code poll()}. A FetchSnapshot
 *   answer's chunk from byte 0 states those control records as {@code control_records} both ways (parsed from the
 *   leader's snapshot; written into the snapshot bytes fed to a follower, which its later chunks continue).
 *   {@code resign}: {@code resign(epoch)}, then {@code poll()}. {@code shutdown}: {@code shutdown(timeout_ms)},
 *   then {@code poll()}; once the returned future is done ({@code isRunning()} false) every input but
 *   {@code restart} and {@code advance_clock} is refused, as {@code KafkaRaftClientDriver} then polls the client no
 *   more.</li>
 *   <li>{@code restart}: a new client (new channel, queue, clock, random source) on the reopened log and the same
 *   quorum-state store, initialized with the static voters, a new listener registered (it takes effect at the next
 *   poll); no poll. {@code advance_clock}: only the trace's clock
 *   moves (Kafka's clock moves with the next timed input).</li>
 * </ul>
 * Before the input, the clock is set to {@code now} (parked fetches whose deadline passed are answered then). An
 * exception from the client is the answer {@code refused}; an input the harness cannot express is a
 * {@link HarnessError}.
 *
 * <p>A node without a directory id (or cluster id) in the trace gets a fixed stand-in, since Kafka's client needs
 * one; it is reported back as {@code null}, as the trace says it. Kafka's listener name is the voters' endpoints'
 * (one listener per voter: static voters). Sends are reported in the trace's vocabulary
 * ({@link KraftspecRaftMessages}): a LeaderChange record's voter sets ascending (Kafka lists a hash set); where the client sends one request to several voters, the order it
 * took is stated by the Python hook ({@code kraftspec.harness.raft.trace_step}) as the input's {@code order}.
 */
public final class KraftspecRaftSession implements Session {
    private static final Field QUORUM = field("quorum");
    private static final Field PARTITION_STATE = field("partitionState");
    private static final Method HANDLE_INBOUND = method("handleInboundMessage", RaftMessage.class, long.class);
    private static final Method MAYBE_TRANSITION_TO_LEADER =
        method("maybeTransitionToLeader", CandidateState.class, long.class);
    private static final Method MAYBE_APPEND_BATCHES = method("maybeAppendBatches", LeaderState.class, long.class);
    private static final Field EPOCH_START_OFFSETS = mockLogField("epochStartOffsets");
    private static final Field BATCHES = mockLogField("batches");
    private static final String CLUSTER_STAND_IN = "kraftspec-harness-cluster";
    /** Kafka's clock is the trace's plus this (2023-11-14T22:13:20Z): an epoch-millisecond clock. */
    static final long CLOCK_BASE = 1_700_000_000_000L;
    /** A correlation id the client never gives a request (its ids count from 1). */
    static final int NO_REQUEST = -1;

    private final int localId;
    /** The node's kraft.version as formatted: 0 (static voters) or 1 (a bootstrap checkpoint, KIP-853). */
    private final int kraftVersion;
    /** A kraft.version 1 node's bootstrap voters (its checkpoint's VotersRecord); null at kraft.version 0. */
    private final VotersRecord bootstrapVoters;
    /** {@code canBecomeVoter}: a kraft.version 1 node's {@code can_become_voter} (default true), false at 0. */
    private final boolean canBecomeVoter;
    private final TreeSet<Integer> voters = new TreeSet<>();
    private final ListenerName listener;
    private final Map<Integer, InetSocketAddress> voterAddresses = new TreeMap<>();
    private final Endpoints localListeners;
    private final int electionTimeoutMs;
    private final int fetchTimeoutMs;
    private final int electionBackoffMaxMs;
    private final int requestTimeoutMs;
    private final int fetchMaxWaitMs;
    private final int fetchMaxRecords;
    private final int retryBackoffMs;
    private final int fetchSnapshotMaxBytes;
    /** {@code controller.quorum.auto.join.enable}: the trace's {@code config.auto_join} (Kafka's default false). */
    private final boolean autoJoin;
    private final Uuid directoryId;
    private final String clusterId;
    private final KraftspecRaftMessages messages;

    /** Harness errors raised inside Kafka's calls, thrown by {@link #step} once the call returns. */
    private final RaisedInKafka raised = new RaisedInKafka();
    // durable across restarts
    private final TraceLog log;
    private final MockQuorumStateStore store = new MockQuorumStateStore();
    private final AtomicInteger correlationIds = new AtomicInteger(1);

    private Incarnation node;
    private long clock;
    private final List<ObjectNode> sends = new ArrayList<>();
    /** Every request the client sent, with the index of the input whose handling sent it. */
    private final List<SentRequest> requested = new ArrayList<>();
    /** The index of the input being applied (-1 while the session opens). */
    private int inputIndex = -1;
    /** The correlation id a response input was delivered under when it stated the request it answers. */
    private Integer deliveredCorrelationId;

    private record SentRequest(int input, ObjectNode request) {
    }

    /**
     * {@code initial}: {@code {"explicit": STATE, "granted": [ids]}}: STATE is the trace format's explicit raft
     * state; {@code granted} (optional) are votes a node that starts as Candidate has received (then it may be
     * elected at once, as the reference's {@code raft/leader} standard state is).
     */
    public KraftspecRaftSession(JsonNode initial, JsonNode request) throws Exception {
        JsonNode explicit = initial.get("explicit");
        if (explicit == null || !explicit.isObject()) throw new HarnessError("raft: initial needs an 'explicit' state");
        localId = explicit.path("local_id").asInt();
        kraftVersion = KraftspecRaftMessages.intField(explicit, "kraft_version", 0);
        canBecomeVoter = kraftVersion == 1 && explicit.path("can_become_voter").asBoolean(true);
        if (kraftVersion == 1) {
            bootstrapVoters = bootstrapVoters(explicit);
            Map<ListenerName, InetSocketAddress> own = ownListeners(explicit, bootstrapVoters);
            listener = own.keySet().iterator().next();
            localListeners = Endpoints.fromInetSocketAddresses(own);
            for (VotersRecord.Voter v : bootstrapVoters.voters()) {
                VotersRecord.Endpoint e = v.endpoints().find(listener.value());
                if (e == null) {
                    throw new HarnessError("raft: bootstrap voter " + v.voterId() + " has no " + listener.value()
                        + " listener (the node's own first listener, the one the quorum uses)");
                }
                voters.add(v.voterId());
                voterAddresses.put(v.voterId(), InetSocketAddress.createUnresolved(e.host(), e.port()));
            }
        } else {
            if (kraftVersion != 0) throw new HarnessError("raft: kraft_version " + kraftVersion + " (0 or 1)");
            for (String name : List.of("bootstrap_voters", "listeners")) {
                if (explicit.hasNonNull(name)) {
                    throw new HarnessError("raft: initial.explicit." + name + " is a kraft.version 1 node's");
                }
            }
            bootstrapVoters = null;
            JsonNode voterList = explicit.get("voters");
            if (voterList == null || voterList.isNull()) {
                voters.addAll(List.of(1, 2, 3));
            } else {
                voterList.forEach(v -> voters.add(v.asInt()));
            }
            String listenerName = staticVoterAddresses(explicit.get("endpoints"));
            listener = ListenerName.normalised(listenerName == null ? "CONTROLLER" : listenerName);
            localListeners = voterAddresses.containsKey(localId)
                ? Endpoints.fromInetSocketAddresses(Map.of(listener, voterAddresses.get(localId)))
                : Endpoints.empty();
        }
        JsonNode config = explicit.path("config");
        electionTimeoutMs = config.path("election_timeout_ms").asInt(1000);
        fetchTimeoutMs = config.path("fetch_timeout_ms").asInt(2000);
        electionBackoffMaxMs = config.path("election_backoff_max_ms").asInt(1000);
        requestTimeoutMs = config.path("request_timeout_ms").asInt(2000);
        fetchMaxWaitMs = config.path("fetch_max_wait_ms").asInt(500);
        fetchMaxRecords = config.path("fetch_max_records").asInt(1000);
        retryBackoffMs = config.path("retry_backoff_ms").asInt(QuorumConfig.DEFAULT_QUORUM_RETRY_BACKOFF_MS);
        fetchSnapshotMaxBytes = config.path("fetch_snapshot_max_bytes")
            .asInt(QuorumConfig.DEFAULT_QUORUM_FETCH_SNAPSHOT_MAX_BYTES);
        autoJoin = config.path("auto_join").asBoolean(QuorumConfig.DEFAULT_QUORUM_AUTO_JOIN_ENABLE);
        String directory = KraftspecRaftMessages.stringField(explicit, "directory_id");
        Uuid directoryStandIn = directory == null ? new Uuid(0x6b72616674737065L, 0x6861726e65737300L | localId)
            : null;
        directoryId = directory == null ? directoryStandIn : Uuid.fromString(directory);
        String cluster = KraftspecRaftMessages.stringField(explicit, "cluster_id");
        clusterId = cluster == null ? CLUSTER_STAND_IN : cluster;
        messages = new KraftspecRaftMessages(listener, directoryStandIn, cluster == null ? CLUSTER_STAND_IN : null);

        log = new TraceLog(fetchMaxRecords);
        if (bootstrapVoters != null) writeBootstrapCheckpoint(log, bootstrapVoters);
        long now = explicit.path("now").asLong(0);
        clock = now;
        long logStart = 0;
        JsonNode snapshot = explicit.get("snapshot");
        if (snapshot != null && !snapshot.isNull()) { // the log starts at a snapshot (KIP-630)
            OffsetAndEpoch id = new OffsetAndEpoch(snapshot.path("end_offset").asLong(),
                snapshot.path("epoch").asInt());
            try (org.apache.kafka.snapshot.RawSnapshotWriter writer = log.createNewSnapshotUnchecked(id).orElseThrow()) {
                writer.append(MemoryRecords.readableRecords(
                    KraftspecRaftMessages.snapshotBytes(id, snapshot.path("size").asLong(),
                        KraftspecRaftMessages.SnapshotControl.NONE)));
                writer.freeze();
            }
            logStart = id.offset();
            log.flush(false); // a restarted node's log is on disk to its end, which is the snapshot's without entries
            log.flushedSinceLastChecked();
        }
        JsonNode entries = explicit.get("log");
        if (entries != null && !entries.isNull() && !entries.isEmpty()) {
            log.appendAsFollower(KraftspecRaftMessages.entriesAsRecords(entries, logStart, now, "initial.log"),
                Integer.MAX_VALUE);
            log.flush(false);
            log.flushedSinceLastChecked();
        }
        JsonNode quorumState = explicit.get("quorum_state");
        if (quorumState != null && !quorumState.isNull()) {
            store.writeElectionState(electionState(quorumState), KRaftVersion.fromFeatureLevel((short) kraftVersion));
        }
        node = new Incarnation(now, explicit.path("jitter").asInt(0));
        JsonNode granted = initial.get("granted");
        if (granted != null && !granted.isNull() && !granted.isEmpty()) {
            CandidateState candidate = node.quorum().candidateStateOrThrow();
            granted.forEach(v -> candidate.recordGrantedVote(v.asInt()));
            invoke(MAYBE_TRANSITION_TO_LEADER, node.client, candidate, CLOCK_BASE + now);
            if (node.quorum().isLeader()) {
                // the LeaderChange record appended and flushed, BeginQuorumEpoch not yet sent (the reference's
                // ``_to_leader``); Kafka does this at the start of its next poll
                invoke(MAYBE_APPEND_BATCHES, node.client, node.quorum().leaderStateOrThrow(), CLOCK_BASE + now);
            }
            sends.clear();
        }
        raised.rethrow("opening the session");
    }

    /**
     * The static voters' addresses ({@code endpoints}, default {@code CONTROLLER://controllerID:9093}) put in
     * {@link #voterAddresses}; returns their one listener's name (null without voters).
     */
    private String staticVoterAddresses(JsonNode endpoints) {
        String listenerName = null;
        for (int voter : voters) {
            String text = "CONTROLLER://controller" + voter + ":9093";
            if (endpoints != null && !endpoints.isNull()) {
                JsonNode given = endpoints.get(Integer.toString(voter));
                if (given == null || given.size() != 1) {
                    throw new HarnessError("raft: static voters have exactly one endpoint each; voter " + voter
                        + " has " + given);
                }
                text = given.get(0).asText();
            }
            KraftspecRaftMessages.Endpoint e = KraftspecRaftMessages.Endpoint.parse(text, "initial.endpoints");
            if (listenerName != null && !listenerName.equals(e.listener())) {
                throw new HarnessError("raft: static voters share one listener; found " + listenerName + " and "
                    + e.listener());
            }
            listenerName = e.listener();
            voterAddresses.put(voter, e.address());
        }
        return listenerName;
    }

    /**
     * A kraft.version 1 node's bootstrap voters ({@code bootstrap_voters}), as {@code kafka-storage format
     * --initial-controllers} gives them (every voter's kraft.version range 0 to 1). A node formatted with
     * {@code --no-initial-controllers} has none: Kafka's {@code Formatter} then writes no bootstrap checkpoint at all
     * ({@code DirectoryType.STATIC_METADATA_DIRECTORY}), and the node reads kraft.version 0 and no voters until it
     * fetches them; it can only start with {@code controller.quorum.bootstrap.servers}, which the trace does not state.
     */
    private static VotersRecord bootstrapVoters(JsonNode explicit) {
        String path = "initial.explicit";
        for (String name : List.of("voters", "endpoints", "snapshot")) {
            if (explicit.hasNonNull(name)) {
                throw new HarnessError("raft: a kraft.version 1 node takes its voters from its bootstrap checkpoint ("
                    + path + "." + name + " is not expressible)");
            }
        }
        if (KraftspecRaftMessages.stringField(explicit, "directory_id") == null) {
            throw new HarnessError("raft: a kraft.version 1 node needs its " + path + ".directory_id");
        }
        JsonNode given = explicit.get("bootstrap_voters");
        VotersRecord record = KraftspecRaftMessages.votersRecord(
            given == null || given.isNull() ? KraftspecRaftMessages.NODES.arrayNode() : given, (short) 0,
            path + ".bootstrap_voters");
        if (record.voters().isEmpty()) {
            throw new HarnessError("raft: a node formatted with --no-initial-controllers (no " + path
                + ".bootstrap_voters) has no bootstrap checkpoint and needs controller.quorum.bootstrap.servers, "
                + "which the trace does not state");
        }
        return record;
    }

    /**
     * The node's own listeners ({@code listeners}; default its entry in the bootstrap voters, else
     * {@code CONTROLLER://controllerID:9093}), in order: the first is the one the quorum uses
     * ({@code controller.listener.names}' first).
     */
    private Map<ListenerName, InetSocketAddress> ownListeners(JsonNode explicit, VotersRecord bootstrap) {
        List<String> texts = new ArrayList<>();
        JsonNode given = explicit.get("listeners");
        if (given != null && !given.isNull()) {
            given.forEach(t -> texts.add(t.asText()));
        } else {
            bootstrap.voters().stream().filter(v -> v.voterId() == localId).findFirst()
                .ifPresent(v -> v.endpoints().forEach(e -> texts.add(e.name() + "://" + e.host() + ":" + e.port())));
            if (texts.isEmpty()) texts.add("CONTROLLER://controller" + localId + ":9093");
        }
        if (texts.isEmpty()) throw new HarnessError("raft: initial.explicit.listeners is empty");
        Map<ListenerName, InetSocketAddress> own = new java.util.LinkedHashMap<>();
        for (String text : texts) {
            KraftspecRaftMessages.Endpoint e = KraftspecRaftMessages.Endpoint.parse(text, "initial.explicit.listeners");
            own.put(ListenerName.normalised(e.listener()), e.address());
        }
        return own;
    }

    /**
     * The bootstrap checkpoint {@code 00000000000000000000-0000000000.checkpoint} as {@code Formatter
     * .writeDynamicQuorumSnapshot} writes it: snapshot (0, 0) holding kraft.version 1 and the voter set, read by
     * {@code KRaftControlRecordStateMachine} when the client initializes.
     */
    private static void writeBootstrapCheckpoint(TraceLog log, VotersRecord voters) {
        RecordsSnapshotWriter.Builder builder = new RecordsSnapshotWriter.Builder()
            .setLastContainedLogTimestamp(0)
            .setTime(new MockTime(0, 0, 0))
            .setMaxBatchSizeBytes(KafkaRaftClient.MAX_BATCH_SIZE_BYTES)
            .setMemoryPool(MemoryPool.NONE)
            .setRawSnapshotWriter(log.createNewSnapshotUnchecked(Snapshots.BOOTSTRAP_SNAPSHOT_ID).orElseThrow())
            .setKraftVersion(KRaftVersion.KRAFT_VERSION_1)
            .setVoterSet(Optional.of(VoterSet.fromVotersRecord(voters)));
        try (SnapshotWriter<String> writer = builder.build(KraftspecRaftMessages.SERDE)) {
            writer.freeze();
        }
    }

    private ElectionState electionState(JsonNode q) {
        int epoch = q.path("epoch").asInt();
        int leader = KraftspecRaftMessages.intField(q, "leader_id", -1);
        JsonNode voted = q.get("voted_key");
        Optional<ReplicaKey> votedKey = voted == null || voted.isNull() ? Optional.empty()
            : Optional.of(ReplicaKey.of(voted.path("id").asInt(), KraftspecRaftMessages.uuid(voted.get("directory_id"))));
        if (leader >= 0) return ElectionState.withElectedLeader(epoch, leader, votedKey, voters);
        if (votedKey.isPresent()) return ElectionState.withVotedCandidate(epoch, votedKey.get(), voters);
        return ElectionState.withUnknownLeader(epoch, voters);
    }

    // ----------------------------------------------------------------------------------------------
    // one client incarnation

    private final class Incarnation {
        final MockTime time;
        final MockNetworkChannel channel;
        final MockMessageQueue queue = new MockMessageQueue();
        final TraceRandom random = new TraceRandom(raised);
        final KafkaRaftClient<String> client;
        final Map<Integer, Integer> lastSent = new HashMap<>();
        final Metrics metrics;
        /** What {@code shutdown(timeoutMs)} returned, once called. */
        CompletableFuture<Void> shutdown;
        final ListenerView stateMachine = new ListenerView();

        Incarnation(long now, int jitter) {
            time = new MockTime(0, CLOCK_BASE + now, 0);
            random.jitter = jitter;
            channel = new MockNetworkChannel(correlationIds) {
                @Override
                public void send(RaftRequest.Outbound request) {
                    if (node != null && node.channel != this) return; // a dead incarnation's
                    int destination = request.destination().id();
                    lastSent.put(destination, request.correlationId());
                    // as the client built it (its topic name included: the wire drops it from Fetch v13 on)
                    ObjectNode sent = messages.request(destination, localId, request.correlationId(),
                        request.data());
                    sends.add(sent);
                    requested.add(new SentRequest(inputIndex, sent));
                }

                @Override
                public ListenerName listenerName() {
                    return listener;
                }
            };
            Map<String, Object> settings = new HashMap<>();
            settings.put(QuorumConfig.QUORUM_ELECTION_TIMEOUT_MS_CONFIG, electionTimeoutMs);
            settings.put(QuorumConfig.QUORUM_FETCH_TIMEOUT_MS_CONFIG, fetchTimeoutMs);
            settings.put(QuorumConfig.QUORUM_ELECTION_BACKOFF_MAX_MS_CONFIG, electionBackoffMaxMs);
            settings.put(QuorumConfig.QUORUM_REQUEST_TIMEOUT_MS_CONFIG, requestTimeoutMs);
            settings.put(QuorumConfig.QUORUM_RETRY_BACKOFF_MS_CONFIG, retryBackoffMs);
            settings.put(QuorumConfig.QUORUM_FETCH_SNAPSHOT_MAX_BYTES_CONFIG, fetchSnapshotMaxBytes);
            settings.put(QuorumConfig.QUORUM_LINGER_MS_CONFIG, 0);
            settings.put(QuorumConfig.QUORUM_AUTO_JOIN_ENABLE_CONFIG, autoJoin);
            QuorumConfig quorumConfig = new QuorumConfig(new AbstractConfig(QuorumConfig.CONFIG_DEF, settings));
            client = new KafkaRaftClient<>(
                OptionalInt.of(localId),
                directoryId,
                KraftspecRaftMessages.SERDE,
                channel,
                queue,
                log,
                MemoryPool.NONE,
                time,
                new MockExpirationService(time),
                fetchMaxWaitMs,
                canBecomeVoter,
                clusterId,
                kraftVersion == 1 ? List.copyOf(voterAddresses.values()) : List.<InetSocketAddress>of(),
                localListeners,
                Feature.KRAFT_VERSION.supportedVersionRange(),
                new LogContext("[kraftspec raft harness node " + localId + "] "),
                random,
                quorumConfig
            );
            metrics = new Metrics(time);
            Map<Integer, InetSocketAddress> staticVoters = kraftVersion == 1 ? Map.of() : voterAddresses;
            client.initialize(staticVoters, store, metrics, new ExternalKRaftMetrics() {
                @Override
                public void setIgnoredStaticVoters(boolean ignoredStaticVoters) {
                }
            });
            client.register(stateMachine);
        }

        QuorumState quorum() {
            try {
                return (QuorumState) QUORUM.get(client);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }

        void close() {
            metrics.close();
        }
    }

    /**
     * A state machine above the client ({@code RaftClient.Listener}) that reads each batch reader to its end and closes
     * it at once, remembering where the committed records handed over end, the last leader and epoch it was told
     * ({@code LeaderAndEpoch.UNKNOWN}: no leader, epoch 0, at first) and the id of the last snapshot it loaded.
     */
    static final class ListenerView implements RaftClient.Listener<String> {
        long committedEnd = 0;
        int leaderId = -1;
        int epoch = 0;
        OffsetAndEpoch loadedSnapshot = null;

        @Override
        public void handleCommit(BatchReader<String> reader) {
            try {
                while (reader.hasNext()) {
                    committedEnd = reader.next().lastOffset() + 1;
                }
            } finally {
                reader.close();
            }
        }

        /** The snapshot read to its end: the records handed over then end at its end offset (KIP-630). */
        @Override
        public void handleLoadSnapshot(SnapshotReader<String> reader) {
            try {
                while (reader.hasNext()) reader.next();
                committedEnd = reader.lastContainedLogOffset() + 1;
                loadedSnapshot = reader.snapshotId();
            } finally {
                reader.close();
            }
        }

        /** The bootstrap checkpoint (0, 0) of a kraft.version 1 node, read to its end as a snapshot is. */
        @Override
        public void handleLoadBootstrap(SnapshotReader<String> reader) {
            handleLoadSnapshot(reader);
        }

        @Override
        public void handleLeaderChange(LeaderAndEpoch leader) {
            leaderId = leader.leaderId().orElse(-1);
            epoch = leader.epoch();
        }
    }

    /** The trace's draws: the election jitter and the bootstrap server's start index, told apart by the caller. */
    private static final class TraceRandom extends MockableRandom {
        private final RaisedInKafka raised;
        int jitter;
        int bootstrap;

        TraceRandom(RaisedInKafka raised) {
            super(0L);
            this.raised = raised;
        }

        @Override
        public int nextInt(int bound) {
            boolean bootstrapDraw = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
                .walk(frames -> frames.limit(6).anyMatch(f -> f.getDeclaringClass() == RequestManager.class));
            if (bootstrapDraw) return Math.floorMod(bootstrap, bound);
            boolean electionDraw = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE)
                .walk(frames -> frames.limit(6).anyMatch(f -> f.getDeclaringClass() == QuorumState.class));
            if (electionDraw) return Math.floorMod(jitter, bound);
            throw raised.remember(new HarnessError("raft: Kafka's client drew a random number the trace has no draw for "
                + "(bound " + bound + ")"));
        }
    }

    /**
     * Kafka's {@link MockLog}, whose {@code read} returns whole batches as the production log does, where MockLog
     * returns at most two: the batch holding the start offset always (however many records it has), then each
     * following batch while the records read stay within {@code fetch_max_records}, the reference's stand-in for
     * {@code quorum.fetch.max.bytes}.
     */
    static final class TraceLog extends MockLog {
        private final int maxRecords;

        TraceLog(int maxRecords) {
            super(KraftspecRaftMessages.METADATA_PARTITION, Uuid.METADATA_TOPIC_ID, new LogContext());
            this.maxRecords = maxRecords;
        }

        @Override
        public LogFetchInfo read(long startOffset, Isolation isolation, int maxTotalBatchBytes) {
            long maxOffset = isolation == Isolation.COMMITTED ? highWatermark().offset() : endOffset().offset();
            if (startOffset >= maxOffset || startOffset < startOffset()) {
                return super.read(startOffset, isolation, maxTotalBatchBytes);
            }
            if (startOffset > endOffset().offset()) {
                throw new OffsetOutOfRangeException("Requested offset " + startOffset + " is larger than the log end "
                    + "offset " + endOffset().offset());
            }
            ByteBuffer buffer = ByteBuffer.allocate(512);
            int batchCount = 0;
            int recordCount = 0;
            // a listener's committed read asks for any size: the production log reads to the high watermark
            int cap = maxTotalBatchBytes == Integer.MAX_VALUE ? Integer.MAX_VALUE : maxRecords;
            LogOffsetMetadata batchStartOffset = null;
            // readBatches begins at the batch containing startOffset (its last offset is at or past it)
            for (LogBatch batch : readBatches(startOffset, OptionalLong.of(maxOffset))) {
                if (batch.entries().isEmpty() || buffer.position() >= maxTotalBatchBytes) continue;
                // the first batch is read whole even past the cap; a later one only if it fits
                if (batchCount > 0 && recordCount + batch.entries().size() > cap) break;
                buffer = batch.writeTo(buffer);
                if (batchStartOffset == null) batchStartOffset = batch.entries().get(0).logOffsetMetadata();
                batchCount += 1;
                recordCount += batch.entries().size();
            }
            buffer.flip();
            Records records = MemoryRecords.readableRecords(buffer);
            if (batchCount > 1) records = records.slice(0, maxTotalBatchBytes);
            if (batchStartOffset == null) {
                throw new RuntimeException("Expected to find at least one entry starting from offset " + startOffset);
            }
            return new LogFetchInfo(records, batchStartOffset);
        }

        /**
         * As Kafka's production log answers it ({@code KafkaRaftLog.endOffsetForEpoch} over
         * {@code LeaderEpochFileCache.endOffsetFor}): an epoch below every cached epoch gets that epoch and the first
         * cached epoch's start offset. MockLog answers such an epoch with epoch 0 (its lower bound without a
         * snapshot), a test double's shortcut that would change the leader's DivergingEpoch and the follower's
         * truncation; every other case is MockLog's own answer, which is production's.
         */
        @Override
        public OffsetAndEpoch endOffsetForEpoch(int epoch) {
            List<long[]> cache = epochCache();
            if (!cache.isEmpty() && epoch >= 0 && epoch < cache.get(0)[0] && latestSnapshotId().isEmpty()) {
                return new OffsetAndEpoch(cache.get(0)[1], epoch);
            }
            return super.endOffsetForEpoch(epoch);
        }

        /**
         * As Kafka's production log answers it ({@code KafkaRaftLog.endOffset}: {@code UnifiedLog}'s log end offset):
         * a log holding no records ends at its start, also once a snapshot fetched past that is frozen. MockLog ends
         * such a log at its latest snapshot's end, so {@code truncateToLatestSnapshot} (which compares the fetched
         * snapshot's end with the log's) would find nothing to truncate when the snapshot has the log's epoch, and
         * {@code handleFetchSnapshotResponse} throws "Full log truncation expected"; a test double's shortcut, like
         * {@link #endOffsetForEpoch}'s. Every other case is MockLog's own answer, which is production's.
         */
        @Override
        public LogOffsetMetadata endOffset() {
            LogOffsetMetadata end = super.endOffset();
            try {
                if (((List<?>) BATCHES.get(this)).isEmpty() && end.offset() != startOffset()) {
                    return new LogOffsetMetadata(startOffset(), end.metadata());
                }
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            return end;
        }

        /**
         * Whether the latest snapshot is past the log's records as the production log judges it when opened
         * ({@code KafkaRaftLog.truncateToLatestSnapshot}, run by {@code createLog}): by the epoch of its last record,
         * 0 without one ({@code UnifiedLog.latestEpoch}). MockLog's own check reads its epoch cache, which leaves out
         * an epoch equal to its latest snapshot's, and so would also drop the records of that epoch after it.
         */
        boolean latestSnapshotPastRecords() {
            Optional<OffsetAndEpoch> latest = latestSnapshotId();
            if (latest.isEmpty()) return false;
            List<LogBatch> held = readBatches(startOffset(), OptionalLong.empty());
            int lastEpoch = held.isEmpty() ? 0 : held.get(held.size() - 1).epoch();
            OffsetAndEpoch id = latest.get();
            return id.epoch() > lastEpoch || (id.epoch() == lastEpoch && id.offset() > endOffset().offset());
        }

        /** The epoch cache: (epoch, start offset) ascending, MockLog's {@code epochStartOffsets}. */
        List<long[]> epochCache() {
            try {
                List<?> starts = (List<?>) EPOCH_START_OFFSETS.get(this);
                List<long[]> cache = new ArrayList<>();
                for (Object start : starts) {
                    Class<?> type = start.getClass();
                    cache.add(new long[] {
                        ((Number) type.getDeclaredMethod("epoch").invoke(start)).longValue(),
                        ((Number) type.getDeclaredMethod("startOffset").invoke(start)).longValue()
                    });
                }
                return cache;
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    // ----------------------------------------------------------------------------------------------
    // steps

    /**
     * A {@link HarnessError} raised inside a call into Kafka's client (the random source), where a
     * {@code catch (Exception)} of Kafka's may turn it into an answer: remembered when raised and thrown again, naming
     * the step, once the call returns, so that a harness limit is never taken for Kafka's answer.
     */
    static final class RaisedInKafka {
        private HarnessError first;

        HarnessError remember(HarnessError error) {
            if (first == null) first = error;
            return error;
        }

        /** Throws the first error remembered since the last call, if any, saying {@code where} it was raised. */
        void rethrow(String where) {
            HarnessError error = first;
            first = null;
            if (error != null) {
                throw new HarnessError("raft: " + where + ": " + error.getMessage().replaceFirst("^raft: ", "")
                    + " (raised inside Kafka's client, which may have caught it)");
            }
        }
    }

    @Override
    public ObjectNode step(JsonNode input) throws Exception {
        sends.clear();
        inputIndex++;
        deliveredCorrelationId = null;
        String where = "step " + inputIndex + " (" + input.path("action").asText() + ")";
        try {
            ObjectNode answer = apply(input);
            raised.rethrow(where);
            return answer;
        } catch (HarnessError e) {
            raised.rethrow(where);
            throw e;
        } catch (Exception | AssertionError e) {
            raised.rethrow(where); // Kafka's code may have thrown because of it
            if (deliveredCorrelationId == null) throw e;
            // Kafka's code threw on a response delivered under the id of the request it answers: the refusal says it
            ObjectNode answer = KraftspecRaftMessages.NODES.objectNode();
            ObjectNode refused = answer.putObject("refused");
            refused.put("exception", e.getClass().getName());
            refused.put("message", String.valueOf(e.getMessage()));
            answer.put("delivered_correlation_id", deliveredCorrelationId);
            return answer;
        }
    }

    private ObjectNode apply(JsonNode input) throws Exception {
        String action = input.path("action").asText();
        if (action.equals("advance_clock")) {
            clock = input.path("now").asLong();
            ObjectNode answer = KraftspecRaftMessages.NODES.objectNode();
            answer.putObject("output");
            return answer;
        }
        long now = input.has("now") && !input.get("now").isNull() ? input.get("now").asLong() : clock;
        int jitter = input.path("jitter").asInt(0);
        int bootstrap = input.path("bootstrap").asInt(0);
        ObjectNode response = KraftspecRaftMessages.NODES.objectNode();
        if (action.equals("restart")) {
            clock = now;
            node.close();
            log.reopen();
            // as the production log is opened (KafkaRaftLog.createLog): a latest snapshot past what survived the
            // crash replaces the log, which MockLog's reopen leaves to the caller
            if (log.latestSnapshotPastRecords()) log.truncateToLatestSnapshot();
            node = new Incarnation(now, jitter);
            sends.clear();
            response.set("sends", sendsJson());
            return output(response);
        }
        if (CLOCK_BASE + now < node.time.milliseconds()) {
            throw new HarnessError("raft: time goes back from " + (node.time.milliseconds() - CLOCK_BASE) + " to "
                + now + " (Kafka's clock is monotonic)");
        }
        if (!node.client.isRunning()) {
            throw new IllegalStateException("raft: the client's graceful shutdown has finished (its driver polls it "
                + "no more)");
        }
        clock = now;
        node.random.jitter = jitter;
        node.random.bootstrap = bootstrap;
        node.time.setCurrentTimeMs(CLOCK_BASE + now);
        JsonNode message = input.get("message");
        String path = "input.message";
        switch (action) {
            case "tick":
                break;
            case "vote_request":
                inboundRequest(message, message.path("replica_id").asInt(), messages.voteRequest(message),
                    ApiKeys.VOTE.latestVersion(), now);
                break;
            case "fetch_request":
                inboundRequest(message, message.path("replica_id").asInt(),
                    messages.fetchRequest(message, QuorumConfig.DEFAULT_QUORUM_FETCH_MAX_BYTES),
                    ApiKeys.FETCH.latestVersion(), now);
                break;
            case "begin_quorum_epoch_request":
                inboundRequest(message, message.path("leader_id").asInt(),
                    messages.beginQuorumEpochRequest(message, path), ApiKeys.BEGIN_QUORUM_EPOCH.latestVersion(), now);
                break;
            case "end_quorum_epoch_request":
                inboundRequest(message, message.path("leader_id").asInt(), messages.endQuorumEpochRequest(message),
                    ApiKeys.END_QUORUM_EPOCH.latestVersion(), now);
                break;
            case "describe_quorum_request":
                inboundRequest(message, message.path("source").asInt(-1),
                    KraftspecRaftMessages.describeQuorumRequest(message),
                    (short) message.path("version").asInt(ApiKeys.DESCRIBE_QUORUM.latestVersion()), now);
                break;
            case "vote_response":
                inboundResponse(message, input.get("answers"), messages.voteResponse(message, path), now);
                break;
            case "fetch_response":
                inboundResponse(message, input.get("answers"),
                    messages.fetchResponse(message, log.endOffset().offset(), now, path), now);
                break;
            case "quorum_epoch_response":
                inboundResponse(message, input.get("answers"), messages.quorumEpochResponse(message, path), now);
                break;
            case "fetch_snapshot_request":
                inboundRequest(message, message.path("replica_id").asInt(), messages.fetchSnapshotRequest(message),
                    ApiKeys.FETCH_SNAPSHOT.latestVersion(), now);
                break;
            case "fetch_snapshot_response":
                inboundResponse(message, input.get("answers"), messages.fetchSnapshotResponse(message, path), now);
                break;
            case "update_raft_voter_request":
                inboundRequest(message, message.path("voter_id").asInt(), messages.updateRaftVoterRequest(message, path),
                    ApiKeys.UPDATE_RAFT_VOTER.latestVersion(), now);
                break;
            case "update_raft_voter_response":
                inboundResponse(message, input.get("answers"), messages.updateRaftVoterResponse(message, path), now);
                break;
            case "add_raft_voter_request":
                requireClusterId(message);
                inboundRequest(message, message.path("source").asInt(-1),
                    KraftspecRaftMessages.addRaftVoterRequest(message, path), ApiKeys.ADD_RAFT_VOTER.latestVersion(),
                    now);
                break;
            case "remove_raft_voter_request":
                requireClusterId(message);
                inboundRequest(message, message.path("source").asInt(-1),
                    KraftspecRaftMessages.removeRaftVoterRequest(message), ApiKeys.REMOVE_RAFT_VOTER.latestVersion(),
                    now);
                break;
            case "api_versions_response":
                inboundResponse(message, input.get("answers"), KraftspecRaftMessages.apiVersionsResponse(message, path),
                    now);
                break;
            case "voter_change_response":
                inboundResponse(message, input.get("answers"), KraftspecRaftMessages.voterChangeResponse(message, path),
                    now);
                break;
            case "create_snapshot": {
                OffsetAndEpoch id = new OffsetAndEpoch(input.path("end_offset").asLong(), input.path("epoch").asInt());
                long size = input.path("size").asLong();
                List<String> filler = KraftspecRaftMessages.fillerFor(size, snapshotControl(id));
                Optional<SnapshotWriter<String>> writer = node.client.createSnapshot(id, 0);
                if (writer.isPresent()) {
                    try (SnapshotWriter<String> w = writer.get()) {
                        if (!filler.isEmpty()) w.append(filler);
                        w.freeze();
                    }
                    long written = log.readSnapshot(id).orElseThrow().sizeInBytes();
                    if (written != size) {
                        throw new HarnessError("raft: the snapshot " + id + " holds " + written + " bytes, not "
                            + size);
                    }
                }
                node.client.poll();
                response.set("sends", sendsJson());
                response.put("created", writer.isPresent());
                return output(response);
            }
            case "upgrade_kraft_version": {
                // KafkaRaftClient.upgradeKRaftVersion, whose caller (RaftClient's API) gets no answer: its glue run
                // here, keeping LeaderState.maybeAppendUpgradedKRaftVersion's boolean (the trace's ``upgraded``); a
                // refusal leaves the node as it was, unpolled, and is stated by the exception's simple name
                boolean upgraded;
                try {
                    KRaftVersion version = KRaftVersion.fromFeatureLevel((short) input.path("kraft_version").asInt());
                    LeaderState<?> leader = node.quorum().maybeLeaderState().orElseThrow(
                        () -> new NotLeaderException("raft: the upgrade needs a leader"));
                    KRaftControlRecordStateMachine state =
                        (KRaftControlRecordStateMachine) PARTITION_STATE.get(node.client);
                    upgraded = leader.maybeAppendUpgradedKRaftVersion(input.path("epoch").asInt(), version,
                        state.lastKraftVersion(), state.lastVoterSet(), input.path("validate_only").asBoolean(false),
                        node.time.milliseconds());
                } catch (NotLeaderException | InvalidUpdateVersionException | IllegalArgumentException
                         | IllegalStateException e) {
                    response.set("sends", sendsJson());
                    response.putNull("upgraded");
                    response.put("error", e.getClass().getSimpleName());
                    return output(response);
                }
                node.client.poll();
                response.set("sends", sendsJson());
                response.put("upgraded", upgraded);
                response.putNull("error");
                return output(response);
            }
            case "delete_before_snapshot":
                log.deleteBeforeSnapshot(new OffsetAndEpoch(input.path("end_offset").asLong(),
                    input.path("epoch").asInt()));
                break;
            case "append": {
                List<String> records = new ArrayList<>();
                for (JsonNode record : input.path("records")) records.add(record.toString());
                long offset;
                try {
                    offset = node.client.prepareAppend(node.quorum().epoch(), records);
                    node.client.schedulePreparedAppend();
                } catch (NotLeaderException e) {
                    response.set("sends", sendsJson());
                    response.putNull("last_offset");
                    return output(response);
                }
                node.client.poll();
                response.set("sends", sendsJson());
                response.put("last_offset", offset);
                return output(response);
            }
            case "resign":
                node.client.resign(input.path("epoch").asInt());
                break;
            case "shutdown":
                node.shutdown = node.client.shutdown(input.path("timeout_ms").asInt());
                break;
            default:
                throw new HarnessError("raft: unknown action '" + action + "'");
        }
        node.client.poll();
        response.set("sends", sendsJson());
        return output(response);
    }

    /**
     * An admin request naming a cluster id reaches a node the trace gives none only through the stand-in, which
     * Kafka's refusal would name in its message ({@code KafkaRaftClient.handleAddVoterRequest} and
     * {@code handleRemoveVoterRequest}: "doesn't match the cluster id"):
     * Kafka's node always has a cluster id, so the input is not expressible.
     */
    private void requireClusterId(JsonNode message) {
        String asked = KraftspecRaftMessages.stringField(message, "cluster_id");
        if (asked != null && clusterId.equals(CLUSTER_STAND_IN) && !asked.equals(CLUSTER_STAND_IN)) {
            throw new HarnessError("raft: the request names cluster id " + asked + " but the node has none (Kafka's "
                + "node always has one; the harness's stand-in would show in the answer)");
        }
    }

    private ObjectNode output(ObjectNode response) {
        ObjectNode answer = KraftspecRaftMessages.NODES.objectNode();
        ObjectNode output = answer.putObject("output");
        output.set("response", response);
        output.putArray("records");
        if (deliveredCorrelationId != null) answer.put("delivered_correlation_id", deliveredCorrelationId);
        return answer;
    }

    private ArrayNode sendsJson() {
        ArrayNode array = KraftspecRaftMessages.NODES.arrayNode();
        sends.forEach(array::add);
        sends.clear();
        return array;
    }

    private void inboundRequest(JsonNode message, int source, ApiMessage data, short version, long now)
        throws Exception {
        int correlationId = message.path("correlation_id").asInt(0);
        RaftRequest.Inbound request = new RaftRequest.Inbound(listener, correlationId, version,
            KraftspecRaftMessages.roundTrip(data, version), CLOCK_BASE + now);
        Incarnation current = node;
        request.completion.whenComplete((response, exception) -> {
            if (node != current) return; // answered by a client that has since crashed: never sent
            if (exception != null) throw new IllegalStateException(exception);
            ApiMessage answered = response.data();
            sends.add(withControlRecords(messages.response(source, localId, response.correlationId(),
                withoutRecords(answered) ? answered : KraftspecRaftMessages.roundTrip(answered, version))));
        });
        invoke(HANDLE_INBOUND, node.client, request, CLOCK_BASE + now);
    }

    /**
     * A FetchSnapshot answer's chunk from byte 0 as the trace states it: with {@code control_records}, the control
     * records after the header of the snapshot's first batch (parsed from the leader's snapshot, whose prefix the
     * chunk is, so that a chunk shorter than that batch states them too); left out when there are none.
     */
    private ObjectNode withControlRecords(ObjectNode send) {
        if (!send.path("type").asText().equals("FetchSnapshotResponse") || send.path("position").asLong() != 0
            || send.path("chunk").asInt() == 0) {
            return send;
        }
        OffsetAndEpoch id = new OffsetAndEpoch(send.path("snapshot_id").get(0).asLong(),
            send.path("snapshot_id").get(1).asInt());
        ArrayNode records = KraftspecRaftMessages.controlRecordsJson(log.readSnapshot(id).orElseThrow(
            () -> new HarnessError("raft: the snapshot " + id + " served from byte 0 is not in the log")).records());
        if (!records.isEmpty()) send.set("control_records", records);
        return send;
    }

    /**
     * The control records {@code KafkaRaftClient.createSnapshot} gives the writer of snapshot {@code id}: the
     * kraft.version and voter set of its client's {@code partitionState} at the snapshot's last offset.
     */
    private KraftspecRaftMessages.SnapshotControl snapshotControl(OffsetAndEpoch id) throws IllegalAccessException {
        KRaftControlRecordStateMachine state = (KRaftControlRecordStateMachine) PARTITION_STATE.get(node.client);
        return new KraftspecRaftMessages.SnapshotControl(state.kraftVersionAtOffset(id.offset() - 1),
            state.voterSetAtOffset(id.offset() - 1));
    }

    /**
     * A FetchSnapshot answer with a partition error, which Kafka 4.3's client builds without records
     * ({@code RaftUtil.singletonFetchSnapshotResponse}): its generated {@code FetchSnapshotResponseData} cannot size or
     * write a null {@code UnalignedRecords} (a {@code NullPointerException} in {@code PartitionSnapshot.addSize}), so
     * it is reported as the client built it, not written and read back.
     */
    private static boolean withoutRecords(ApiMessage data) {
        return data instanceof org.apache.kafka.common.message.FetchSnapshotResponseData r && !r.topics().isEmpty()
            && r.topics().get(0).partitions().stream().anyMatch(p -> p.unalignedRecords() == null);
    }

    private void inboundResponse(JsonNode message, JsonNode answers, ApiMessage data, long now) throws Exception {
        int source = message.path("source").asInt();
        JsonNode given = message.get("correlation_id");
        int correlationId = given == null || given.isNull() ? node.lastSent.getOrDefault(source, -1) : given.asInt();
        if (answers != null && !answers.isNull()) {
            correlationId = answeredCorrelationId(answers);
            deliveredCorrelationId = correlationId;
        }
        InetSocketAddress address = voterAddresses.get(source);
        Node from = address == null ? new Node(source, "unknown", 0)
            : new Node(source, address.getHostString(), address.getPort());
        ApiMessage read = KraftspecRaftMessages.roundTrip(data, KraftspecRaftMessages.latest(data));
        invoke(HANDLE_INBOUND, node.client, new RaftResponse.Inbound(correlationId, read, from), CLOCK_BASE + now);
    }

    /**
     * The correlation id under which a real network hands the client a response whose input states the request it
     * answers ({@code answers}: the recorded node's request and the index of the input that sent it): the id the
     * client gave the same request (same destination and fields) sent while handling that same input, or
     * {@link #NO_REQUEST} when the client sent no such request (the response then answers nothing the client
     * asked, so it is never taken as an answer).
     */
    private int answeredCorrelationId(JsonNode answers) {
        int input = answers.path("input").asInt(-1);
        JsonNode asked = withoutCorrelationId(answers.get("request"));
        for (SentRequest sent : requested) {
            if (sent.input() == input && asked.equals(SAME_VALUE, withoutCorrelationId(sent.request()))) {
                return sent.request().path("correlation_id").asInt();
            }
        }
        return NO_REQUEST;
    }

    private static JsonNode withoutCorrelationId(JsonNode request) {
        if (request == null || !request.isObject()) throw new HarnessError("raft: 'answers.request' must be an object");
        ObjectNode copy = ((ObjectNode) request).deepCopy();
        copy.remove("correlation_id");
        return copy;
    }

    /** JSON leaves compared by value: numbers numerically (an int and a long of one value are equal). */
    private static final java.util.Comparator<JsonNode> SAME_VALUE = (a, b) -> {
        if (a.isNumber() && b.isNumber()) return a.decimalValue().compareTo(b.decimalValue());
        return a.equals(b) ? 0 : 1;
    };

    // ----------------------------------------------------------------------------------------------
    // post-state

    @Override
    public ObjectNode post() {
        QuorumState quorum = node.quorum();
        ObjectNode post = KraftspecRaftMessages.NODES.objectNode();
        post.put("clock", clock);
        post.put("role", quorum.isLeader() ? "Leader" : quorum.isFollower() ? "Follower"
            : quorum.isCandidate() ? "Candidate" : quorum.isProspective() ? "Prospective"
            : quorum.isResigned() ? "Resigned" : quorum.isUnattached() ? "Unattached" : "Unknown");
        post.put("epoch", quorum.epoch());
        post.put("leader_id", quorum.leaderIdOrSentinel());
        post.set("voted_key", key(quorum.votedKey()));
        post.put("high_watermark", quorum.highWatermark().map(LogOffsetMetadata::offset).orElse(-1L));
        post.put("log_end_offset", log.endOffset().offset());
        post.put("log_start_offset", log.startOffset());
        Optional<OffsetAndEpoch> latest = log.latestSnapshotId();
        if (latest.isEmpty()) {
            post.putNull("latest_snapshot_id");
        } else {
            ArrayNode id = post.putArray("latest_snapshot_id");
            id.add(latest.get().offset());
            id.add(latest.get().epoch());
        }
        post.put("flushed_end_offset", log.firstUnflushedOffset());
        post.put("last_fetched_epoch", log.lastFetchedEpoch());
        ArrayNode cache = post.putArray("epoch_cache");
        for (long[] pair : log.epochCache()) {
            ArrayNode p = cache.addArray();
            p.add(pair[0]);
            p.add(pair[1]);
        }
        ArrayNode entries = post.putArray("log");
        for (MockLog.LogBatch batch : log.readBatches(log.startOffset(), OptionalLong.empty())) {
            MemoryRecords records = MemoryRecords.readableRecords(batch.writeTo(ByteBuffer.allocate(256)).flip());
            entries.addAll(KraftspecRaftMessages.recordsJson(records));
        }
        ObjectNode file = post.putObject("quorum_state_file");
        Optional<ElectionState> stored = store.readElectionState();
        file.put("epoch", stored.map(ElectionState::epoch).orElse(0));
        file.put("leader_id", stored.map(ElectionState::leaderIdOrSentinel).orElse(-1));
        file.set("voted_key", key(stored.flatMap(ElectionState::optionalVotedKey)));
        CompletableFuture<Void> shutdown = node.shutdown;
        if (shutdown == null) {
            post.putNull("shutdown");
        } else {
            post.put("shutdown", !shutdown.isDone() ? "pending"
                : shutdown.isCompletedExceptionally() ? "timed_out" : "completed");
        }
        ObjectNode view = post.putObject("listener");
        view.put("committed_end", node.stateMachine.committedEnd);
        view.put("leader_id", node.stateMachine.leaderId);
        view.put("epoch", node.stateMachine.epoch);
        OffsetAndEpoch loaded = node.stateMachine.loadedSnapshot;
        if (loaded == null) {
            view.putNull("loaded_snapshot");
        } else {
            view.putArray("loaded_snapshot").add(loaded.offset()).add(loaded.epoch());
        }
        return post;
    }

    private JsonNode key(Optional<ReplicaKey> key) {
        if (key.isEmpty()) return KraftspecRaftMessages.NODES.nullNode();
        ObjectNode k = KraftspecRaftMessages.NODES.objectNode();
        k.put("id", key.get().id());
        k.set("directory_id", messages.directory(key.get().directoryId().orElse(null)));
        return k;
    }

    // ----------------------------------------------------------------------------------------------
    // reflection on the client's private members (the harness drives the client's own dispatch)

    private static Field field(String name) {
        try {
            Field f = KafkaRaftClient.class.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Field mockLogField(String name) {
        try {
            Field f = MockLog.class.getDeclaredField(name);
            f.setAccessible(true);
            return f;
        } catch (NoSuchFieldException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Method method(String name, Class<?>... types) {
        try {
            Method m = KafkaRaftClient.class.getDeclaredMethod(name, types);
            m.setAccessible(true);
            return m;
        } catch (NoSuchMethodException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private static Object invoke(Method method, Object target, Object... args) throws Exception {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception exception) throw exception;
            if (cause instanceof Error error) throw error;
            throw e;
        }
    }
}
