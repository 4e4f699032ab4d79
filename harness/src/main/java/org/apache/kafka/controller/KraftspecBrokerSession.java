package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;
import io.kraftspec.harness.Records;
import io.kraftspec.harness.Session;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.StaleBrokerEpochException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.FenceBrokerRecord;
import org.apache.kafka.common.metadata.MetadataJsonConverters;
import org.apache.kafka.common.metadata.MetadataRecordType;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.RemoveTopicRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.metadata.UnfenceBrokerRecord;
import org.apache.kafka.common.metadata.UnregisterBrokerRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.metadata.BrokerHeartbeatReply;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.BrokerRegistrationReply;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The {@code broker} component: Kafka's own {@link ClusterControlManager} (with its {@link BrokerHeartbeatManager}),
 * {@link FeatureControlManager}, {@link ConfigurationControlManager} and {@link ReplicationControlManager}, on one
 * {@link SnapshotRegistry}, under a clock that only the trace moves ({@link KraftspecTraceTime}: one trace unit is one
 * millisecond, the session timeout given in the same unit), driven by broker trace inputs (traces/FORMAT.md).
 *
 * <p>The harness stands in for the {@code QuorumController} that normally owns these managers and mirrors its glue,
 * method by method (Kafka 4.3 {@code QuorumController}; the version lines differ only where noted):
 * <ul>
 *   <li><b>Writing</b> ({@code ControllerWriteEvent.run}): an operation runs only on the active controller
 *   ({@code NotControllerException} otherwise); its records are appended at the next write offset
 *   ({@code OffsetControlManager.nextWriteOffset}), each replayed at its offset before the next, then
 *   {@code processBatchEndOffset} gets the last record's offset, or {@code nextWriteOffset - 1} when none was
 *   written. Every record is taken as committed (the trace models no uncommitted suffix).</li>
 *   <li><b>Replay</b> ({@code QuorumController.replay}): each record type to its manager, RegisterBrokerRecord with
 *   its offset.</li>
 *   <li><b>register_broker</b> ({@code QuorumController.registerBroker}): the finalized features at the latest
 *   epoch plus {@code kraft.version} at the Raft client's level, {@code registerBroker(request,
 *   nextWriteOffset, features, apiVersion >= 3)}; the request travels at its {@code version} (written and read
 *   back as on the wire, so fields the version lacks take their defaults; a version above the highest this Kafka
 *   takes is sent at that one, as ApiVersions negotiation does).</li>
 *   <li><b>heartbeat</b> ({@code QuorumController.processBrokerHeartbeat}): {@code trackBrokerHeartbeat} first (false:
 *   not the active controller), then the write event: {@code registerBrokerRecordOffset} (none:
 *   STALE_BROKER_EPOCH), {@code ReplicationControlManager.processBrokerHeartbeat}, and in
 *   {@code processBatchEndOffset} {@code maybeUpdateControlledShutdownOffset} when the reply says in controlled
 *   shutdown. Cordoned log directories go to a Kafka whose BrokerHeartbeat has them (v2, 4.3+); an older one is
 *   sent the version it takes, without them.</li>
 *   <li><b>heartbeat_timed_out</b>: the same {@code trackBrokerHeartbeat}, then the write event's timeout: the
 *   {@code whenComplete} callback's {@code processExpiredBrokerHeartbeat} (what it throws is dropped, as
 *   {@code whenComplete} keeps the timeout), answered REQUEST_TIMED_OUT.</li>
 *   <li><b>fence_stale_broker</b>: one run of the {@code maybeFenceStaleBroker} periodic task
 *   ({@code registerMaybeFenceStaleBroker}: {@code ReplicationControlManager.maybeFenceOneStaleBroker} as a write
 *   event); periodic tasks run only on the active controller. Which expired session Kafka took (the first in
 *   its tracker's map order) is read off the tracker and reported.</li>
 *   <li><b>unregister_broker</b> ({@code QuorumController.unregisterBroker}):
 *   {@code ReplicationControlManager.unregisterBroker} as a write event.</li>
 *   <li><b>create_topic</b> ({@code QuorumController.createTopics}): a CreateTopics request with the manual
 *   assignment and the topic's configs, {@code ReplicationControlManager.createTopics} as a write event. Kafka
 *   draws the topic id ({@code Uuid.randomUuid}); the id it drew is reported as the input's choice.</li>
 *   <li><b>failover / activate / deactivate</b> ({@code QuorumMetaLogListener.handleLeaderChange}): becoming leader
 *   while not active is {@code claim} ({@code OffsetControlManager.activate} at the log end,
 *   {@code ClusterControlManager.activate}; {@code CompleteActivationEvent} writes nothing on a log with a
 *   metadata.version and no open transaction); another leader while active is {@code renounce}
 *   ({@code ClusterControlManager.deactivate}); the leader staying the leader changes nothing.</li>
 * </ul>
 * What {@code ControllerApis} decides before the controller is mirrored here too: the CLUSTER_ACTION / ALTER
 * authorization (an input's {@code authorized}), the reply built from an exception by {@code Errors.forException},
 * the refusal to create {@code __cluster_metadata}. An exception other than an {@code ApiException} is Kafka's
 * controller failing (a fault that makes it renounce): it propagates, and the harness reports the input refused.
 *
 * <p>The initial state ({@code kraftspec.harness.broker.kafka_initial}) is a bootstrapped controller: metadata.version
 * and the other finalized features replayed first (a level this Kafka does not ship as production-ready is not
 * expressible), the snapshot and log replayed by a standby controller at their offsets, the log end set, then the
 * claim at {@code activated_at}; a standard state's soft state (heartbeat entries, sessions) is then set as the
 * reference holds it. Trace names that are not Uuid texts (incarnations "1", directories) are given name-based
 * Uuids ({@link KraftspecNames}) and named back in the answers.
 *
 * <p>What differs between Kafka lines is in {@code KraftspecBrokerLine} ({@code src/line-4.x}, {@code src/line-3.9}):
 * 3.9 keeps one contact time per registered broker in the heartbeat manager instead of 4.0's
 * {@code BrokerHeartbeatTracker}, has no lock-free heartbeat tracking, no clean-shutdown detection, and ELR as a
 * config; 4.4 moved {@code LogContext} (hence the reflection in {@link #snapshotRegistry()}).
 */
public final class KraftspecBrokerSession implements Session {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String METADATA_TOPIC = "__cluster_metadata";
    private static final String KRAFT_VERSION = "kraft.version";

    private final KraftspecTraceTime time = new KraftspecTraceTime();
    private final KraftspecNames names = new KraftspecNames();
    private final SnapshotRegistry snapshotRegistry;
    private final FeatureControlManager featureControl;
    private final ConfigurationControlManager configurationControl;
    private final ClusterControlManager clusterControl;
    private final ReplicationControlManager replicationControl;
    /** The Raft client's kraft.version (the controller reads it through its {@code KRaftVersionAccessor}). */
    private short kraftVersion;
    /** Whether the trace finalized kraft.version (its initial features, or an upgrade): the post-state names it then. */
    private boolean kraftVersionFinalized;
    /** {@code OffsetControlManager.nextWriteOffset}: the log end. */
    private long nextWriteOffset;
    /** {@code QuorumController.curClaimEpoch != -1}. */
    private boolean active;
    /** The topics and partitions replayed, for the post-state (Kafka keeps them in private maps). */
    private final Map<Uuid, TreeSet<Integer>> partitions = new TreeMap<>();

    public KraftspecBrokerSession(JsonNode initial, JsonNode request) {
        snapshotRegistry = snapshotRegistry();
        String clusterId = text(initial, "cluster_id");
        long sessionTimeout = initial.path("session_timeout").asLong(9000);
        Map<String, Short> features = new TreeMap<>();
        initial.path("features").fields().forEachRemaining(e -> features.put(e.getKey(), (short) e.getValue().asInt()));
        kraftVersionFinalized = features.containsKey(KRAFT_VERSION);
        kraftVersion = features.getOrDefault(KRAFT_VERSION, (short) 0);

        // The levels this controller's software supports: the trace's controller_features, by default the production-ready
        // metadata.version levels (as QuorumFeatures.defaultSupportedFeatureMap) and every level of each feature the
        // trace finalizes.
        Map<String, VersionRange> supported = new HashMap<>();
        if (initial.path("controller_features").isObject()) {
            initial.path("controller_features").fields().forEachRemaining(e ->
                supported.put(e.getKey(), VersionRange.of(e.getValue().get(0).asInt(), e.getValue().get(1).asInt())));
        } else {
            features.keySet().forEach(name -> supported.put(name, VersionRange.of(0, Short.MAX_VALUE)));
            short lowest = (short) Arrays.stream(MetadataVersion.values()).mapToInt(MetadataVersion::featureLevel)
                .filter(level -> level > 0).min().getAsInt(); // 3.3-IV3 on 4.x, 3.0-IV1 on 3.9
            supported.put(MetadataVersion.FEATURE_NAME,
                VersionRange.of(lowest, MetadataVersion.latestProduction().featureLevel()));
        }
        features.remove(KRAFT_VERSION);
        ClusterControlManager[] cluster = new ClusterControlManager[1];
        ClusterFeatureSupportDescriber describer = new ClusterFeatureSupportDescriber() { // QuorumClusterFeatureSupportDescriber
            @Override
            public Iterator<Map.Entry<Integer, Map<String, VersionRange>>> brokerSupported() {
                return cluster[0].brokerSupportedFeatures();
            }

            @Override
            public Iterator<Map.Entry<Integer, Map<String, VersionRange>>> controllerSupported() {
                return cluster[0].controllerSupportedFeatures();
            }
        };
        featureControl = KraftspecBrokerLine.featureControl(snapshotRegistry, new QuorumFeatures(0, supported, List.of(0)),
            describer, () -> kraftVersion, level -> {
                kraftVersion = (short) level;
                kraftVersionFinalized = true;
            });
        configurationControl = KraftspecBrokerLine.configurationControl(snapshotRegistry, configSchema(), featureControl);
        ReplicationControlManager[] replication = new ReplicationControlManager[1];
        clusterControl = KraftspecBrokerLine.clusterControl(clusterId, time, snapshotRegistry,
            KraftspecTraceTime.toNs(sessionTimeout), featureControl,
            (brokerId, clean, records) -> KraftspecBrokerLine.handleBrokerShutdown(replication[0], brokerId, clean, records));
        cluster[0] = clusterControl;
        replicationControl = KraftspecBrokerLine.replicationControl(snapshotRegistry, configurationControl, clusterControl,
            featureControl);
        replication[0] = replicationControl;

        // The bootstrap: metadata.version and the other finalized features, as the log's first records. A level this
        // Kafka does not ship as production-ready (one still in development, enabled only by
        // unstable.feature.versions.enable) has no settled behaviour to judge: not expressible.
        short level = (short) initial.path("metadata_version").asInt();
        MetadataVersion metadataVersion;
        try {
            metadataVersion = MetadataVersion.fromFeatureLevel(level);
        } catch (IllegalArgumentException e) {
            throw new HarnessError("this Kafka does not know metadata.version level " + level);
        }
        if (!metadataVersion.isProduction()) {
            throw new HarnessError("metadata.version " + metadataVersion + " is not production-ready on this Kafka");
        }
        replay(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(level), -1);
        for (Map.Entry<String, Short> feature : features.entrySet()) {
            replay(new FeatureLevelRecord().setName(feature.getKey()).setFeatureLevel(feature.getValue()), -1);
        }
        // The snapshot and log, replayed at their offsets by a controller that is not (yet) active.
        long end = 0;
        for (JsonNode record : initial.path("records")) {
            long offset = record.path("offset").asLong();
            replay(readRecord(record), offset);
            end = offset + 1;
        }
        nextWriteOffset = initial.hasNonNull("next_offset") ? initial.get("next_offset").asLong() : end;
        if (initial.path("active").asBoolean(true)) {
            time.set(initial.path("activated_at").asLong(0));
            claim();
            JsonNode soft = initial.path("soft");
            if (soft.isObject()) setSoftState(soft);
        }
        time.set(0); // the trace's clock starts at 0
    }

    // -----------------------------------------------------------------------------------------------------------
    // Inputs
    // -----------------------------------------------------------------------------------------------------------

    @Override
    public ObjectNode step(JsonNode input) throws Exception {
        String action = text(input, "action");
        switch (action) {
            case "register_broker":
                moveClock(input);
                return registerBroker(input);
            case "heartbeat":
                moveClock(input);
                return heartbeat(input.path("request"), input.path("authorized").asBoolean(true), false);
            case "heartbeat_timed_out":
                moveClock(input);
                return heartbeat(input.path("request"), true, true);
            case "fence_stale_broker":
                moveClock(input);
                return fenceStaleBroker();
            case "unregister_broker":
                return unregisterBroker(input.path("broker_id").asInt(), input.path("authorized").asBoolean(true));
            case "create_topic":
                return createTopic(input);
            case "update_features":
                return updateFeatures(input.path("request"), input.path("authorized").asBoolean(true));
            case "log_advanced": {
                long next = input.path("next_offset").asLong();
                if (next < nextWriteOffset) {
                    throw new IllegalArgumentException("the log end cannot go back from " + nextWriteOffset + " to " + next);
                }
                nextWriteOffset = next;
                return answer(null, List.of(), nextWriteOffset);
            }
            case "advance_clock":
                time.set(input.path("now").asLong());
                return answer(null, List.of(), nextWriteOffset);
            case "failover":
                moveClock(input);
                leaderIsElsewhere();
                leaderIsHere();
                return answer(null, List.of(), nextWriteOffset);
            case "deactivate":
                leaderIsElsewhere();
                return answer(null, List.of(), nextWriteOffset);
            case "activate":
                moveClock(input);
                leaderIsHere();
                return answer(null, List.of(), nextWriteOffset);
            default:
                throw new HarnessError("the broker session has no action '" + action + "'");
        }
    }

    private void moveClock(JsonNode input) {
        if (input.hasNonNull("now")) time.set(input.get("now").asLong());
    }

    /** {@code QuorumController.registerBroker}, after {@code ControllerApis.handleBrokerRegistration}'s authorization. */
    private ObjectNode registerBroker(JsonNode input) {
        if (!input.path("authorized").asBoolean(true)) return answer(error(Errors.CLUSTER_AUTHORIZATION_FAILED, null));
        if (!active) return answer(error(Errors.NOT_CONTROLLER, null));
        JsonNode r = input.path("request");
        short version = (short) r.path("version").asInt(4);
        BrokerRegistrationRequestData request = onTheWire(registrationRequest(r), version);
        version = (short) Math.min(version, BrokerRegistrationRequestData.HIGHEST_SUPPORTED_VERSION);
        long first = nextWriteOffset;
        ControllerResult<BrokerRegistrationReply> result;
        try {
            Map<String, Short> controllerFeatures = new HashMap<>(featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap());
            controllerFeatures.put(KRAFT_VERSION, kraftVersion);
            result = KraftspecBrokerLine.registerBroker(clusterControl, request, nextWriteOffset,
                new FinalizedControllerFeatures(controllerFeatures, Long.MAX_VALUE), version >= 3);
        } catch (ApiException e) {
            return answer(error(Errors.forException(e), e.getMessage()));
        }
        write(result.records());
        ObjectNode response = JSON.createObjectNode();
        response.put("error", Errors.NONE.name());
        response.put("broker_epoch", result.response().epoch());
        return answer(response, result.records(), first);
    }

    /** {@code QuorumController.processBrokerHeartbeat}, after {@code ControllerApis.handleBrokerHeartBeatRequest}'s authorization. */
    private ObjectNode heartbeat(JsonNode r, boolean authorized, boolean timedOut) {
        if (!authorized) return answer(heartbeatError(Errors.CLUSTER_AUTHORIZATION_FAILED));
        BrokerHeartbeatRequestData request = heartbeatRequest(r);
        int brokerId = request.brokerId();
        if (!KraftspecBrokerLine.trackBrokerHeartbeat(clusterControl, brokerId, request.brokerEpoch())) {
            return answer(heartbeatError(Errors.NOT_CONTROLLER));
        }
        if (timedOut) {
            try {
                replicationControl.processExpiredBrokerHeartbeat(request);
            } catch (RuntimeException e) {
                // thrown inside whenComplete: the future keeps completing with the timeout
            }
            return answer(heartbeatError(Errors.REQUEST_TIMED_OUT));
        }
        long first = nextWriteOffset;
        ControllerResult<BrokerHeartbeatReply> result;
        try {
            OptionalLong registerOffset = clusterControl.registerBrokerRecordOffset(brokerId);
            if (registerOffset.isEmpty()) {
                throw new StaleBrokerEpochException(
                    String.format("Receive a heartbeat from broker %d before registration", brokerId));
            }
            result = replicationControl.processBrokerHeartbeat(request, registerOffset.getAsLong());
        } catch (ApiException e) {
            return answer(heartbeatError(Errors.forException(e)));
        }
        long batchEnd = write(result.records());
        BrokerHeartbeatReply reply = result.response();
        if (reply.inControlledShutdown()) {
            clusterControl.heartbeatManager().maybeUpdateControlledShutdownOffset(brokerId, batchEnd);
        }
        ObjectNode response = JSON.createObjectNode();
        response.put("error", Errors.NONE.name());
        response.put("is_caught_up", reply.isCaughtUp());
        response.put("is_fenced", reply.isFenced());
        response.put("in_controlled_shutdown", reply.inControlledShutdown());
        response.put("should_shut_down", reply.shouldShutDown());
        return answer(response, result.records(), first);
    }

    /** One run of the {@code maybeFenceStaleBroker} periodic task. */
    private ObjectNode fenceStaleBroker() {
        ObjectNode response = JSON.createObjectNode();
        if (!active) { // periodic tasks run on the active controller only
            response.putNull("expired_session");
            response.put("fenced", false);
            return answer(response, List.of(), nextWriteOffset);
        }
        long first = nextWriteOffset;
        KraftspecBrokerLine.StaleBrokerRun run = KraftspecBrokerLine.maybeFenceOneStaleBroker(replicationControl,
            clusterControl);
        write(run.records);
        if (run.expired == null) {
            response.putNull("expired_session");
        } else {
            ArrayNode which = response.putArray("expired_session");
            which.add(run.expired.get(0).intValue());
            which.add(run.expired.get(1));
        }
        response.put("fenced", !run.records.isEmpty());
        ObjectNode answer = answer(response, run.records, first);
        if (run.expired != null) answer.putObject("choice").set("which", response.get("expired_session"));
        return answer;
    }

    /** {@code QuorumController.unregisterBroker}, after {@code ControllerApis.handleUnregisterBroker}'s authorization. */
    private ObjectNode unregisterBroker(int brokerId, boolean authorized) {
        if (!authorized) return answer(error(Errors.CLUSTER_AUTHORIZATION_FAILED, null));
        if (!active) return answer(error(Errors.NOT_CONTROLLER, null));
        long first = nextWriteOffset;
        ControllerResult<Void> result;
        try {
            result = replicationControl.unregisterBroker(brokerId);
        } catch (ApiException e) {
            return answer(error(Errors.forException(e), e.getMessage()));
        }
        write(result.records());
        return answer(error(Errors.NONE, null), result.records(), first);
    }

    /**
     * {@code QuorumController.updateFeatures} after {@code ControllerApis.handleUpdateFeatures}' ALTER authorization:
     * the updates and upgrade types read into HashMaps in request order, {@code ConfigurationControlManager
     * .updateFeatures} as a write event, the reply's message as {@code QuorumController} words it.
     */
    private ObjectNode updateFeatures(JsonNode r, boolean authorized) {
        if (!authorized) return answer(error(Errors.CLUSTER_AUTHORIZATION_FAILED, null));
        if (!active) return answer(error(Errors.NOT_CONTROLLER, null));
        Map<String, Short> updates = new HashMap<>();
        Map<String, Byte> upgradeTypes = new HashMap<>();
        for (JsonNode update : r.path("updates")) {
            String feature = text(update, "feature");
            upgradeTypes.put(feature, (byte) update.path("upgrade_type").asInt(1));
            updates.put(feature, (short) update.path("max_version_level").asInt());
        }
        long first = nextWriteOffset;
        ApiError result;
        List<ApiMessageAndVersion> records;
        try {
            ControllerResult<ApiError> outcome = KraftspecBrokerLine.updateFeatures(configurationControl, updates,
                upgradeTypes, r.path("validate_only").asBoolean(false));
            result = outcome.response();
            records = outcome.records();
        } catch (ApiException e) {
            return answer(error(Errors.forException(e), e.getMessage()));
        }
        write(records);
        if (result.error() != Errors.NONE) {
            return answer(error(result.error(), "The update failed for all features since the following feature had "
                + "an error: " + result.message()), records, first);
        }
        return answer(error(Errors.NONE, result.message()), records, first);
    }

    /** {@code ControllerApis.createTopics} and {@code QuorumController.createTopics} for one manually assigned topic. */
    private ObjectNode createTopic(JsonNode input) throws Exception {
        JsonNode topic = input.path("topic");
        String name = text(topic, "name");
        ObjectNode response = JSON.createObjectNode();
        if (name.equals(METADATA_TOPIC)) {
            response.put("error", Errors.INVALID_REQUEST.name());
            return answer(response, List.of(), nextWriteOffset);
        }
        if (!active) {
            response.put("error", Errors.NOT_CONTROLLER.name());
            return answer(response, List.of(), nextWriteOffset);
        }
        CreateTopicsRequestData request = new CreateTopicsRequestData();
        CreateTopicsRequestData.CreatableTopic creatable = new CreateTopicsRequestData.CreatableTopic()
            .setName(name).setNumPartitions(-1).setReplicationFactor((short) -1);
        int index = 0;
        for (JsonNode replicas : input.path("assignments")) {
            List<Integer> brokerIds = new ArrayList<>();
            replicas.forEach(b -> brokerIds.add(b.asInt()));
            creatable.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment()
                .setPartitionIndex(index++).setBrokerIds(brokerIds));
        }
        if (topic.path("unclean_leader_election_enable").asBoolean(false)) {
            creatable.configs().add(new CreateTopicsRequestData.CreatableTopicConfig()
                .setName("unclean.leader.election.enable").setValue("true"));
        }
        if (topic.has("min_insync_replicas") && topic.get("min_insync_replicas").asInt() != 1) {
            creatable.configs().add(new CreateTopicsRequestData.CreatableTopicConfig()
                .setName("min.insync.replicas").setValue(topic.get("min_insync_replicas").asText()));
        }
        request.topics().add(creatable);
        ControllerRequestContext context = new ControllerRequestContext(new RequestHeaderData(),
            KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
        long first = nextWriteOffset;
        ControllerResult<CreateTopicsResponseData> result = createTopics(context, request, Set.of(name));
        CreateTopicsResponseData.CreatableTopicResult topicResult = result.response().topics().find(name);
        write(result.records());
        response.put("error", Errors.forCode(topicResult.errorCode()).name());
        ObjectNode answer = answer(response, result.records(), first);
        if (topicResult.errorCode() == Errors.NONE.code()) {
            answer.putObject("choice").put("topic_id", names.name(topicResult.topicId()));
        }
        return answer;
    }

    /** {@code createTopics(context, request, describable[, forwarded = false])}: 4.3 added {@code forwarded}. */
    @SuppressWarnings("unchecked")
    private ControllerResult<CreateTopicsResponseData> createTopics(ControllerRequestContext context,
                                                                    CreateTopicsRequestData request,
                                                                    Set<String> describable) throws Exception {
        for (Method method : ReplicationControlManager.class.getDeclaredMethods()) {
            if (!method.getName().equals("createTopics")) continue;
            method.setAccessible(true);
            try {
                if (method.getParameterCount() == 4) {
                    return (ControllerResult<CreateTopicsResponseData>) method.invoke(replicationControl, context, request, describable, false);
                }
                if (method.getParameterCount() == 3) {
                    return (ControllerResult<CreateTopicsResponseData>) method.invoke(replicationControl, context, request, describable);
                }
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof Exception) throw (Exception) e.getCause();
                throw e;
            }
        }
        throw new HarnessError("this Kafka's ReplicationControlManager has no createTopics the harness knows");
    }

    // -----------------------------------------------------------------------------------------------------------
    // Leadership (QuorumMetaLogListener.handleLeaderChange, claim, renounce)
    // -----------------------------------------------------------------------------------------------------------

    private void leaderIsHere() {
        if (!active) claim(); // already the leader: the claim epoch moves on, nothing else changes
    }

    private void leaderIsElsewhere() {
        if (active) renounce();
    }

    private void claim() {
        active = true;
        clusterControl.activate();
    }

    private void renounce() {
        active = false;
        clusterControl.deactivate();
    }

    // -----------------------------------------------------------------------------------------------------------
    // Writing and replaying records
    // -----------------------------------------------------------------------------------------------------------

    /** Appends and replays {@code records}; returns what {@code processBatchEndOffset} gets. */
    private long write(List<ApiMessageAndVersion> records) {
        if (!active) throw new IllegalStateException("only the active controller writes");
        if (records.isEmpty()) return nextWriteOffset - 1;
        long offset = nextWriteOffset;
        for (ApiMessageAndVersion record : records) {
            replay(record.message(), offset++);
        }
        nextWriteOffset = offset;
        return offset - 1;
    }

    /** {@code QuorumController.replay}, for the record types of the broker lifecycle. */
    private void replay(ApiMessage message, long offset) {
        MetadataRecordType type = MetadataRecordType.fromId(message.apiKey());
        switch (type) {
            case REGISTER_BROKER_RECORD:
                clusterControl.replay((RegisterBrokerRecord) message, offset);
                break;
            case UNREGISTER_BROKER_RECORD:
                clusterControl.replay((UnregisterBrokerRecord) message);
                break;
            case TOPIC_RECORD:
                replicationControl.replay((TopicRecord) message);
                partitions.putIfAbsent(((TopicRecord) message).topicId(), new TreeSet<>());
                break;
            case PARTITION_RECORD:
                replicationControl.replay((PartitionRecord) message);
                partitions.computeIfAbsent(((PartitionRecord) message).topicId(), id -> new TreeSet<>())
                    .add(((PartitionRecord) message).partitionId());
                break;
            case CONFIG_RECORD:
                configurationControl.replay((ConfigRecord) message);
                break;
            case PARTITION_CHANGE_RECORD:
                replicationControl.replay((PartitionChangeRecord) message);
                break;
            case FENCE_BROKER_RECORD:
                clusterControl.replay((FenceBrokerRecord) message);
                break;
            case UNFENCE_BROKER_RECORD:
                clusterControl.replay((UnfenceBrokerRecord) message);
                break;
            case REMOVE_TOPIC_RECORD:
                replicationControl.replay((RemoveTopicRecord) message);
                partitions.remove(((RemoveTopicRecord) message).topicId());
                break;
            case FEATURE_LEVEL_RECORD:
                featureControl.replay((FeatureLevelRecord) message);
                break;
            case BROKER_REGISTRATION_CHANGE_RECORD:
                clusterControl.replay((BrokerRegistrationChangeRecord) message);
                break;
            case NO_OP_RECORD:
                break;
            default: // ClearElrRecord (4.x)
                if (!KraftspecBrokerLine.replay(replicationControl, message)) {
                    throw new HarnessError("the broker session does not replay " + type);
                }
        }
    }

    /** A record of the initial state, given as Kafka's JSON converter writes it ({@code type}, {@code version}, {@code data}). */
    private ApiMessage readRecord(JsonNode record) {
        String type = text(record, "type");
        MetadataRecordType kind = null;
        for (MetadataRecordType candidate : MetadataRecordType.values()) {
            String simple = candidate.newMetadataRecord().getClass().getSimpleName();
            if (simple.equals(type) || simple.equals(type + "Data")) kind = candidate;
        }
        if (kind == null) throw new HarnessError("unknown record type " + type);
        JsonNode data = record.path("data").deepCopy();
        names.toUuids(data);
        // replay reads the fields, never the version: read them at the type's highest version, so a record the
        // trace states at a version too old for some of its fields (log_dirs on a v0 RegisterBrokerRecord) keeps them
        return MetadataJsonConverters.readJson(data, kind.id(), kind.highestSupportedVersion());
    }

    // -----------------------------------------------------------------------------------------------------------
    // Requests from the trace's JSON
    // -----------------------------------------------------------------------------------------------------------

    private BrokerRegistrationRequestData registrationRequest(JsonNode r) {
        BrokerRegistrationRequestData request = new BrokerRegistrationRequestData()
            .setBrokerId(r.path("broker_id").asInt())
            .setClusterId(r.path("cluster_id").isNull() ? null : r.path("cluster_id").asText())
            .setIncarnationId(names.uuid(text(r, "incarnation_id")))
            .setRack(r.hasNonNull("rack") ? r.get("rack").asText() : null)
            .setIsMigratingZkBroker(r.path("is_migrating_zk_broker").asBoolean(false))
            .setPreviousBrokerEpoch(r.path("previous_broker_epoch").asLong(-1));
        for (JsonNode listener : r.path("listeners")) {
            request.listeners().add(new BrokerRegistrationRequestData.Listener()
                .setName(listener.path("name").asText())
                .setHost(listener.path("host").asText())
                .setPort(listener.path("port").asInt())
                .setSecurityProtocol((short) listener.path("security_protocol").asInt(0)));
        }
        for (JsonNode feature : r.path("features")) {
            request.features().add(new BrokerRegistrationRequestData.Feature()
                .setName(feature.path("name").asText())
                .setMinSupportedVersion((short) feature.path("min_supported").asInt())
                .setMaxSupportedVersion((short) feature.path("max_supported").asInt()));
        }
        List<Uuid> logDirs = new ArrayList<>();
        r.path("log_dirs").forEach(d -> logDirs.add(names.uuid(d.asText())));
        request.setLogDirs(logDirs);
        return request;
    }

    /**
     * The request as the controller reads it after the broker sent it at {@code version}; a version above the highest
     * this Kafka takes is sent at that highest one, as the client's ApiVersions negotiation does (3.9 takes v0-3, whose
     * fields v4 only adds a rule for the broker's features to).
     */
    private static BrokerRegistrationRequestData onTheWire(BrokerRegistrationRequestData request, short version) {
        if (version < BrokerRegistrationRequestData.LOWEST_SUPPORTED_VERSION) {
            throw new HarnessError("this Kafka takes BrokerRegistration versions "
                + BrokerRegistrationRequestData.LOWEST_SUPPORTED_VERSION + " to "
                + BrokerRegistrationRequestData.HIGHEST_SUPPORTED_VERSION + ", not " + version);
        }
        version = (short) Math.min(version, BrokerRegistrationRequestData.HIGHEST_SUPPORTED_VERSION);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size;
        try {
            size = request.size(cache, version);
        } catch (UnsupportedVersionException e) {
            throw new HarnessError("a BrokerRegistration v" + version + " cannot carry this request: " + e.getMessage());
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        request.write(new ByteBufferAccessor(buffer), cache, version);
        buffer.flip();
        return new BrokerRegistrationRequestData(new ByteBufferAccessor(buffer), version);
    }

    private BrokerHeartbeatRequestData heartbeatRequest(JsonNode r) {
        BrokerHeartbeatRequestData request = new BrokerHeartbeatRequestData()
            .setBrokerId(r.path("broker_id").asInt())
            .setBrokerEpoch(r.path("broker_epoch").asLong(-1))
            .setCurrentMetadataOffset(r.path("current_metadata_offset").asLong())
            .setWantFence(r.path("want_fence").asBoolean())
            .setWantShutDown(r.path("want_shut_down").asBoolean());
        List<Uuid> offline = new ArrayList<>();
        r.path("offline_log_dirs").forEach(d -> offline.add(names.uuid(d.asText())));
        request.setOfflineLogDirs(offline);
        if (r.hasNonNull("cordoned_log_dirs")) {
            List<Uuid> cordoned = new ArrayList<>();
            r.get("cordoned_log_dirs").forEach(d -> cordoned.add(names.uuid(d.asText())));
            try {
                BrokerHeartbeatRequestData.class.getMethod("setCordonedLogDirs", List.class).invoke(request, cordoned);
            } catch (NoSuchMethodException e) {
                // Kafka before 4.3 takes BrokerHeartbeat v0-1, which has no CordonedLogDirs (v2+, tagged): a broker
                // sends it at the version the controller takes, without them
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        return request;
    }

    // -----------------------------------------------------------------------------------------------------------
    // Answers and the post-state
    // -----------------------------------------------------------------------------------------------------------

    private ObjectNode answer(ObjectNode response) {
        return answer(response, List.of(), nextWriteOffset);
    }

    private ObjectNode answer(ObjectNode response, List<ApiMessageAndVersion> records, long firstOffset) {
        ObjectNode answer = JSON.createObjectNode();
        ObjectNode output = answer.putObject("output");
        if (response != null) output.set("response", response);
        output.set("records", names.toNames(Records.toJson(firstOffset, records)));
        return answer;
    }

    private static ObjectNode error(Errors error, String message) {
        ObjectNode response = JSON.createObjectNode();
        response.put("error", error.name());
        if (message != null) response.put("message", message);
        return response;
    }

    /** A BrokerHeartbeat error reply as {@code ControllerApis} builds it: the error code, the rest the schema's defaults. */
    private static ObjectNode heartbeatError(Errors error) {
        BrokerHeartbeatResponseData data = new BrokerHeartbeatResponseData().setErrorCode(error.code());
        ObjectNode response = JSON.createObjectNode();
        response.put("error", error.name());
        response.put("is_caught_up", data.isCaughtUp());
        response.put("is_fenced", data.isFenced());
        response.put("should_shut_down", data.shouldShutDown());
        return response;
    }

    @Override
    public ObjectNode post() {
        ObjectNode post = JSON.createObjectNode();
        post.put("clock", time.units());
        post.put("active", active);
        post.put("next_offset", nextWriteOffset);
        ObjectNode features = post.putObject("features");
        TreeMap<String, Short> finalized = new TreeMap<>(featureControl.finalizedFeatures(Long.MAX_VALUE).featureMap());
        if (kraftVersionFinalized) finalized.put(KRAFT_VERSION, kraftVersion);
        finalized.forEach((name, level) -> {
            if (level != 0) features.put(name, (int) level);
        });
        ObjectNode brokers = post.putObject("brokers");
        new TreeMap<>(clusterControl.brokerRegistrations()).forEach((id, registration) -> {
            ObjectNode b = brokers.putObject(String.valueOf(id));
            b.put("epoch", registration.epoch());
            b.put("incarnation_id", names.name(registration.incarnationId()));
            b.put("fenced", registration.fenced());
            b.put("in_controlled_shutdown", registration.inControlledShutdown());
        });
        ObjectNode heartbeats = post.putObject("heartbeats");
        ObjectNode sessions = post.putObject("sessions");
        if (active) {
            BrokerHeartbeatManager manager = clusterControl.heartbeatManager();
            TreeMap<Integer, BrokerHeartbeatManager.BrokerHeartbeatState> entries = new TreeMap<>();
            manager.brokers().forEach(s -> entries.put(s.id(), s));
            entries.forEach((id, s) -> {
                ObjectNode h = heartbeats.putObject(String.valueOf(id));
                h.put("fenced", s.fenced());
                h.put("metadata_offset", KraftspecBrokerLine.metadataOffset(s));
                h.put("controlled_shutdown_offset", manager.controlledShutdownOffset(id).orElse(-1));
            });
            TreeMap<List<Long>, Long> contacts = new TreeMap<>((a, b) -> a.get(0).equals(b.get(0))
                ? Long.compare(a.get(1), b.get(1)) : Long.compare(a.get(0), b.get(0)));
            contacts.putAll(KraftspecBrokerLine.sessions(clusterControl));
            contacts.forEach((key, ns) -> sessions.put(key.get(0) + ":" + key.get(1), KraftspecTraceTime.toUnits(ns)));
        }
        ObjectNode parts = post.putObject("partitions");
        partitions.forEach((topicId, ids) -> {
            for (int p : ids) {
                PartitionRegistration partition = replicationControl.getPartition(topicId, p);
                if (partition == null) continue;
                ObjectNode o = parts.putObject(names.name(topicId) + ":" + p);
                o.put("leader", partition.leader);
                ArrayNode isr = o.putArray("isr");
                for (int r : partition.isr) isr.add(r);
                o.put("leader_epoch", partition.leaderEpoch);
                o.put("partition_epoch", partition.partitionEpoch);
            }
        });
        return post;
    }

    /** The standard states' soft state: heartbeat entries and sessions as the reference holds them. */
    private void setSoftState(JsonNode soft) {
        BrokerHeartbeatManager manager = clusterControl.heartbeatManager();
        Iterator<Map.Entry<String, JsonNode>> entries = soft.path("heartbeats").fields();
        while (entries.hasNext()) {
            Map.Entry<String, JsonNode> entry = entries.next();
            int id = Integer.parseInt(entry.getKey());
            JsonNode h = entry.getValue();
            manager.touch(id, h.path("fenced").asBoolean(), h.path("metadata_offset").asLong());
            long cso = h.path("controlled_shutdown_offset").asLong(-1);
            if (cso >= 0) manager.maybeUpdateControlledShutdownOffset(id, cso);
        }
        if (soft.has("sessions")) {
            Map<List<Long>, Long> sessions = new HashMap<>();
            soft.get("sessions").fields().forEachRemaining(e -> {
                String[] key = e.getKey().split(":");
                sessions.put(List.of(Long.parseLong(key[0]), Long.parseLong(key[1])),
                    KraftspecTraceTime.toNs(e.getValue().asLong()));
            });
            KraftspecBrokerLine.setSessions(clusterControl, sessions);
        }
    }

    /**
     * The managers' one {@link SnapshotRegistry}, built with a {@code LogContext} (the builders' default one serves
     * the managers): Kafka 4.4 moved {@code LogContext} to {@code org.apache.kafka.common.utils.internals}.
     */
    private static SnapshotRegistry snapshotRegistry() {
        for (String name : List.of("org.apache.kafka.common.utils.LogContext",
                                   "org.apache.kafka.common.utils.internals.LogContext")) {
            try {
                Class<?> logContext = Class.forName(name);
                return SnapshotRegistry.class.getConstructor(logContext)
                    .newInstance(logContext.getConstructor(String.class).newInstance("[kraftspec broker] "));
            } catch (ClassNotFoundException e) {
                // the other line's name
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot build a SnapshotRegistry", e);
            }
        }
        throw new IllegalStateException("this Kafka has no LogContext the harness knows");
    }

    /** TOPIC and BROKER config definitions of the two configs the broker lifecycle reads, with Kafka's synonyms. */
    private static KafkaConfigSchema configSchema() {
        Map<ConfigResource.Type, ConfigDef> defs = new HashMap<>();
        for (ConfigResource.Type type : List.of(ConfigResource.Type.TOPIC, ConfigResource.Type.BROKER)) {
            defs.put(type, new ConfigDef()
                .define("min.insync.replicas", ConfigDef.Type.INT, 1, ConfigDef.Range.atLeast(1),
                    ConfigDef.Importance.MEDIUM, "min.insync.replicas")
                .define("unclean.leader.election.enable", ConfigDef.Type.BOOLEAN, false,
                    ConfigDef.Importance.MEDIUM, "unclean.leader.election.enable"));
        }
        return new KafkaConfigSchema(defs, ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS);
    }

    private static String text(JsonNode node, String field) {
        JsonNode value = node.get(field);
        if (value == null || value.isNull()) throw new HarnessError("missing '" + field + "' in " + node);
        return value.asText();
    }
}
