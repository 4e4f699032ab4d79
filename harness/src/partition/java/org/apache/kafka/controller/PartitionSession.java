package org.apache.kafka.controller;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;
import io.kraftspec.harness.Records;
import io.kraftspec.harness.Session;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.metadata.ConfigRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.requests.AlterPartitionRequest;
import org.apache.kafka.common.requests.AlterPartitionResponse;
import org.apache.kafka.common.requests.ElectLeadersRequest;
import org.apache.kafka.common.requests.ElectLeadersResponse;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.image.writer.ImageWriterOptions;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.placement.StripedReplicaPlacer;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.EligibleLeaderReplicasVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * The {@code partition} component (traces/FORMAT.md "The partition component") on Apache Kafka's own controller:
 * {@link ReplicationControlManager} with {@link PartitionChangeBuilder}, {@link ClusterControlManager},
 * {@link FeatureControlManager} (metadata.version, the ELR feature) and {@link ConfigurationControlManager}
 * (per-topic {@code min.insync.replicas} and {@code unclean.leader.election.enable}) on one
 * {@link SnapshotRegistry}, built as {@code QuorumController}'s constructor builds them.
 *
 * <p>Glue mirrored from Kafka 4.3 {@code QuorumController} (and where the request is turned into a response, the
 * controller's {@code ControllerApis}):
 * <ul>
 *   <li>Initial state: the trace's registrations as metadata records (FeatureLevelRecord, RegisterBrokerRecord,
 *   TopicRecord, ConfigRecord, PartitionRecord) replayed as {@code QuorumController.replay(message, snapshotId,
 *   offset)} dispatches them, then {@code ClusterControlManager.activate()} as {@code QuorumController}'s
 *   activation does.</li>
 *   <li>Every operation: its {@code ControllerResult}'s records replayed in order at consecutive offsets
 *   ({@code ControllerWriteEvent.run}: {@code replay(message, Optional.empty(), nextWriteOffset + i)}), a snapshot
 *   at the new end ({@code OffsetControlManager.handleScheduleAppend}) and the snapshots before it dropped when the
 *   batch commits ({@code OffsetControlManager.handleCommitBatch}).</li>
 *   <li>{@code alter_partition}: {@code QuorumController.alterPartition} (an empty topic list answers an empty
 *   response without running), the request carried over the wire at its version ({@code
 *   AlterPartitionRequest.Builder.build(version)}, serialized, parsed) and answered as {@code
 *   ControllerApis.handleAlterPartitionRequest} does: an {@link ApiException} becomes the request's {@code
 *   getErrorResponse}, the response is read back at the request's version.</li>
 *   <li>{@code elect_leaders}: {@code QuorumController.electLeaders} (an empty, non-null partition list answers an
 *   empty response), {@code ControllerApis.handleElectLeaders} ({@code getErrorResponse} on an exception).</li>
 *   <li>{@code alter_partition_reassignment}: {@code QuorumController.alterPartitionReassignments} with one topic
 *   and partition; the partition's error.</li>
 *   <li>{@code maybe_balance_partition_leaders} / {@code maybe_elect_unclean_leaders}: the periodic tasks
 *   {@code electPreferred} / {@code electUnclean} ({@code QuorumController.registerElectPreferred} /
 *   {@code registerElectUnclean}); the result's flag is {@code run_again}.</li>
 *   <li>{@code handle_broker_fenced}: {@code ReplicationControlManager.handleBrokerFenced}, as
 *   {@code processBrokerHeartbeat} (FENCED, SHUTDOWN_NOW) and {@code maybeFenceOneStaleBroker} call it.</li>
 *   <li>{@code handle_broker_unfenced} / {@code handle_broker_in_controlled_shutdown}: {@code
 *   processBrokerHeartbeat}'s transitions: {@code checkBrokerEpoch} with the registered epoch, then {@code
 *   handleBrokerUnfenced} / {@code handleBrokerInControlledShutdown} with it.</li>
 *   <li>{@code handle_broker_unregistered}: {@code QuorumController.unregisterBroker} ({@code
 *   ReplicationControlManager.unregisterBroker}).</li>
 *   <li>{@code handle_broker_shutdown}: a new incarnation registering, as {@code ClusterControlManager.registerBroker}
 *   writes it: its {@code BrokerShutdownHandler} ({@code QuorumController.handleBrokerShutdown}, i.e. {@code
 *   ReplicationControlManager.handleBrokerShutdown} with the input's clean-shutdown verdict) then the
 *   RegisterBrokerRecord of the new incarnation (the existing registration's fields, the input's incarnation id and
 *   epoch, fenced, not in controlled shutdown). {@code registerBroker} itself is not called: its request checks
 *   (features naming metadata.version, log directories from MV 3.7-IV2, live sessions) concern the broker
 *   component, and the partition traces' registrations carry neither features nor directories.</li>
 * </ul>
 * Output records are the PartitionChangeRecords only (a broker event's own broker record belongs to the broker
 * component), at the trace's offsets counted from its {@code next_offset}. Ids that are not Kafka Uuids are mapped
 * by {@link PartitionTraceIds}. The partition leader on the broker (the leader-side inputs and the post-state's
 * {@code leaders}) is Kafka's {@code kafka.cluster.Partition}, run by {@link PartitionLeaders}; a restarted broker
 * ({@code handle_broker_shutdown}) holds no leader state.
 */
public final class PartitionSession implements Session {
    static final ObjectMapper JSON = new ObjectMapper();
    private static final int NODE_ID = 3000;
    private static final short ALTER_PARTITION_MAX = ApiKeys.ALTER_PARTITION.latestVersion();
    private static final short ELECT_LEADERS_VERSION = ApiKeys.ELECT_LEADERS.latestVersion();
    private static final List<String> BROKER_SIDE = List.of("become_leader", "update_leader_metadata",
        "update_broker_metadata", "stop_leading", "append", "follower_fetch", "maybe_shrink_isr",
        "handle_alter_partition_result");

    private final PartitionTraceIds ids = new PartitionTraceIds();
    private final SnapshotRegistry snapshotRegistry;
    private final FeatureControlManager featureControl;
    private final ClusterControlManager clusterControl;
    private final ConfigurationControlManager configurationControl;
    private final ReplicationControlManager replicationControl;
    /** The brokers' partition leaders ({@code kafka.cluster.Partition}). */
    private final PartitionLeaderSide leaders;
    /** The trace's partitions: {@code topic id -> partition ids}, ascending (the component creates none). */
    private final TreeMap<String, TreeSet<Integer>> partitionKeys = new TreeMap<>();
    /** The controller's log end (every record Kafka wrote). */
    private long nextWriteOffset = 0;
    /** The trace's log end ({@code next_offset}: PartitionChangeRecords only). */
    private long traceOffset;

    public PartitionSession(JsonNode initial, JsonNode request) {
        var logContext = KraftspecLogContext.of("[kraftspec partition] ");
        Time time = new FixedTime();
        snapshotRegistry = new SnapshotRegistry(logContext);
        // QuorumController's constructor: feature, cluster, configuration and replication control on one registry.
        featureControl = new FeatureControlManager.Builder().
            setLogContext(logContext).
            setSnapshotRegistry(snapshotRegistry).
            setQuorumFeatures(new QuorumFeatures(NODE_ID, QuorumFeatures.defaultSupportedFeatureMap(true),
                List.of(NODE_ID))).
            build();
        ReplicationControlManager[] replication = new ReplicationControlManager[1];
        clusterControl = new ClusterControlManager.Builder().
            setLogContext(logContext).
            setClusterId("kraftspecPartitionAAAAA").
            setTime(time).
            setSnapshotRegistry(snapshotRegistry).
            setReplicaPlacer(new StripedReplicaPlacer(new Random(0))).
            setFeatureControlManager(featureControl).
            setBrokerShutdownHandler((brokerId, isCleanShutdown, records) ->
                replication[0].handleBrokerShutdown(brokerId, isCleanShutdown, records)).
            build();
        configurationControl = new ConfigurationControlManager.Builder().
            setLogContext(logContext).
            setSnapshotRegistry(snapshotRegistry).
            setKafkaConfigSchema(new KafkaConfigSchema(Map.of(ConfigResource.Type.TOPIC, LogConfig.configDefCopy()),
                ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS)).
            setStaticConfig(Map.of()).
            setNodeId(NODE_ID).
            setFeatureControl(featureControl).
            build();
        replicationControl = new ReplicationControlManager.Builder().
            setSnapshotRegistry(snapshotRegistry).
            setLogContext(logContext).
            setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE).
            setConfigurationControl(configurationControl).
            setClusterControl(clusterControl).
            setFeatureControl(featureControl).
            build();
        replication[0] = replicationControl;
        leaders = KraftspecLeaderSide.open(clusterControl, replicationControl, ids);
        load(initial);
        clusterControl.activate();
        try {
            for (JsonNode leader : initial.path("leaders")) leaders.step("become_leader", leader);
            leaders.setClock(0);
        } catch (Exception | AssertionError e) {
            leaders.close();
            throw new IllegalArgumentException("the initial leader states: " + e, e);
        }
    }

    // ---------------------------------------------------------------- initial state

    private void load(JsonNode initial) {
        int level = initial.path("metadata_version").asInt();
        MetadataVersion mv;
        try {
            mv = MetadataVersion.fromFeatureLevel((short) level);
        } catch (IllegalArgumentException e) {
            throw new HarnessError("metadata.version level " + level + " is not one Kafka "
                + MetadataVersion.latestProduction().version() + " knows (" + e.getMessage() + ")");
        }
        List<ApiMessageAndVersion> records = new ArrayList<>();
        records.add(new ApiMessageAndVersion(new FeatureLevelRecord().
            setName(MetadataVersion.FEATURE_NAME).setFeatureLevel(mv.featureLevel()), (short) 0));
        if (initial.path("elr_enabled").asBoolean(false)) {
            records.add(new ApiMessageAndVersion(new FeatureLevelRecord().
                setName(EligibleLeaderReplicasVersion.FEATURE_NAME).
                setFeatureLevel(EligibleLeaderReplicasVersion.ELRV_1.featureLevel()), (short) 0));
        }
        for (JsonNode b : initial.path("brokers")) {
            RegisterBrokerRecord record = new RegisterBrokerRecord().
                setBrokerId(b.path("broker_id").asInt()).
                setBrokerEpoch(b.path("epoch").asLong()).
                setIncarnationId(ids.kafka(b.path("incarnation_id").asText())).
                setFenced(b.path("fenced").asBoolean(true)).
                setInControlledShutdown(b.path("in_controlled_shutdown").asBoolean(false)).
                setRack(b.hasNonNull("rack") ? b.get("rack").asText() : null).
                setLogDirs(uuids(b.path("log_dirs")));
            if (b.hasNonNull("cordoned_log_dirs")) KraftspecCordonedDirs.set(record, uuids(b.get("cordoned_log_dirs")));
            records.add(new ApiMessageAndVersion(record, mv.registerBrokerRecordVersion()));
        }
        for (JsonNode t : initial.path("topics")) {
            String name = t.path("name").asText();
            records.add(new ApiMessageAndVersion(new TopicRecord().setName(name).
                setTopicId(ids.kafka(t.path("topic_id").asText())), (short) 0));
            records.add(config(name, TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG,
                Integer.toString(t.path("min_insync_replicas").asInt(1))));
            records.add(config(name, TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG,
                Boolean.toString(t.path("unclean_leader_election_enable").asBoolean(false))));
        }
        for (JsonNode p : initial.path("partitions")) {
            String topicId = p.path("topic_id").asText();
            int partitionId = p.path("partition_id").asInt();
            PartitionRecord record = new PartitionRecord().
                setTopicId(ids.kafka(topicId)).
                setPartitionId(partitionId).
                setReplicas(ints(p.path("replicas"))).
                setDirectories(uuids(p.path("directories"))).
                setIsr(ints(p.path("isr"))).
                setRemovingReplicas(ints(p.path("removing_replicas"))).
                setAddingReplicas(ints(p.path("adding_replicas"))).
                setLeader(p.path("leader").asInt()).
                setLeaderRecoveryState((byte) p.path("leader_recovery_state").asInt(0)).
                setLeaderEpoch(p.path("leader_epoch").asInt(0)).
                setPartitionEpoch(p.path("partition_epoch").asInt(0)).
                setEligibleLeaderReplicas(ints(p.path("elr"))).
                setLastKnownElr(ints(p.path("last_known_elr")));
            records.add(new ApiMessageAndVersion(record, mv.partitionRecordVersion()));
            partitionKeys.computeIfAbsent(topicId, k -> new TreeSet<>()).add(partitionId);
        }
        append(records);
        traceOffset = initial.path("next_offset").asLong(0);
    }

    private static ApiMessageAndVersion config(String topic, String name, String value) {
        return new ApiMessageAndVersion(new ConfigRecord().setResourceType(ConfigResource.Type.TOPIC.id()).
            setResourceName(topic).setName(name).setValue(value), (short) 0);
    }

    // ---------------------------------------------------------------- steps

    @Override
    public ObjectNode step(JsonNode input) throws Exception {
        String action = input.path("action").asText();
        ObjectNode answer = JSON.createObjectNode();
        ObjectNode output = answer.putObject("output");
        List<ApiMessageAndVersion> written;
        switch (action) {
            case "alter_partition":
                written = alterPartition(input.path("request"), output);
                break;
            case "elect_leaders":
                written = electLeaders(input.path("request"), output);
                break;
            case "maybe_balance_partition_leaders":
                written = periodic(replicationControl.maybeBalancePartitionLeaders(), output);
                break;
            case "maybe_elect_unclean_leaders":
                written = periodic(replicationControl.maybeElectUncleanLeaders(), output);
                break;
            case "alter_partition_reassignment":
                written = reassignment(input, output);
                break;
            case "handle_broker_fenced": {
                List<ApiMessageAndVersion> records = new ArrayList<>();
                replicationControl.handleBrokerFenced(input.path("broker_id").asInt(), records);
                written = records;
                break;
            }
            case "handle_broker_unfenced": {
                int brokerId = input.path("broker_id").asInt();
                long epoch = registeredEpoch(brokerId);
                List<ApiMessageAndVersion> records = new ArrayList<>();
                replicationControl.handleBrokerUnfenced(brokerId, epoch, records);
                written = records;
                break;
            }
            case "handle_broker_in_controlled_shutdown": {
                int brokerId = input.path("broker_id").asInt();
                long epoch = registeredEpoch(brokerId);
                List<ApiMessageAndVersion> records = new ArrayList<>();
                replicationControl.handleBrokerInControlledShutdown(brokerId, epoch, records);
                written = records;
                break;
            }
            case "handle_broker_unregistered":
                written = replicationControl.unregisterBroker(input.path("broker_id").asInt()).records();
                break;
            case "handle_broker_shutdown":
                written = shutdown(input);
                leaders.dropBroker(input.path("broker_id").asInt());
                break;
            case "advance_clock":
                leaders.setClock(input.path("now").asLong());
                written = List.of();
                break;
            default:
                if (!BROKER_SIDE.contains(action)) throw new HarnessError("unknown partition action '" + action + "'");
                ObjectNode response = leaders.step(action, input);
                if (response != null) output.set("response", response);
                written = List.of();
        }
        ArrayNode records = output.putArray("records");
        long offset = traceOffset;
        for (ApiMessageAndVersion record : written) {
            if (record.message() instanceof PartitionChangeRecord) records.add(traceRecord(offset++, record));
        }
        append(written);
        traceOffset = offset;
        return answer;
    }

    /** {@code processBrokerHeartbeat}'s {@code checkBrokerEpoch}, with the epoch the broker is registered at. */
    private long registeredEpoch(int brokerId) {
        BrokerRegistration registration = clusterControl.registration(brokerId);
        long epoch = registration == null ? -1 : registration.epoch();
        clusterControl.checkBrokerEpoch(brokerId, epoch);
        return epoch;
    }

    private List<ApiMessageAndVersion> alterPartition(JsonNode json, ObjectNode output) {
        short version = (short) json.path("version").asInt(3);
        if (version < ApiKeys.ALTER_PARTITION.oldestVersion() || version > ALTER_PARTITION_MAX) {
            throw new HarnessError("AlterPartition version " + version + " is not served by Kafka "
                + MetadataVersion.latestProduction().version() + " (" + ApiKeys.ALTER_PARTITION.oldestVersion()
                + "-" + ALTER_PARTITION_MAX + ")");
        }
        AlterPartitionRequestData data = new AlterPartitionRequestData().
            setBrokerId(json.path("broker_id").asInt()).
            setBrokerEpoch(json.path("broker_epoch").asLong(-1));
        for (JsonNode t : json.path("topics")) {
            AlterPartitionRequestData.TopicData topic = new AlterPartitionRequestData.TopicData().
                setTopicId(ids.kafka(t.path("topic_id").asText()));
            for (JsonNode p : t.path("partitions")) {
                List<AlterPartitionRequestData.BrokerState> isr = new ArrayList<>();
                for (JsonNode member : p.path("new_isr_with_epochs")) {
                    isr.add(new AlterPartitionRequestData.BrokerState().
                        setBrokerId(member.get(0).asInt()).setBrokerEpoch(member.get(1).asLong()));
                }
                topic.partitions().add(new AlterPartitionRequestData.PartitionData().
                    setPartitionIndex(p.path("partition_index").asInt()).
                    setLeaderEpoch(p.path("leader_epoch").asInt()).
                    setPartitionEpoch(p.path("partition_epoch").asInt()).
                    setLeaderRecoveryState((byte) p.path("leader_recovery_state").asInt(0)).
                    setNewIsrWithEpochs(isr));
            }
            data.topics().add(topic);
        }
        // The request as the controller receives it: built at its version and carried over the wire.
        AlterPartitionRequest sent = new AlterPartitionRequest.Builder(data).build(version);
        AlterPartitionRequest request = AlterPartitionRequest.parse(sent.serialize(), version);
        AlterPartitionResponseData response;
        List<ApiMessageAndVersion> records = List.of();
        if (request.data().topics().isEmpty()) {
            response = new AlterPartitionResponseData();
        } else {
            ControllerRequestContext context = new ControllerRequestContext(new RequestHeaderData().
                setRequestApiKey(ApiKeys.ALTER_PARTITION.id).setRequestApiVersion(version),
                KafkaPrincipal.ANONYMOUS, OptionalLong.empty());
            try {
                ControllerResult<AlterPartitionResponseData> result =
                    replicationControl.alterPartition(context, request.data());
                response = result.response();
                records = result.records();
            } catch (ApiException e) {
                response = ((AlterPartitionResponse) request.getErrorResponse(0, e)).data();
            }
        }
        response = KraftspecRequests.received(response, version);
        ObjectNode json2 = output.putObject("response");
        json2.put("error_code", Errors.forCode(response.errorCode()).name());
        ArrayNode topics = json2.putArray("topics");
        for (AlterPartitionResponseData.TopicData t : response.topics()) {
            ObjectNode topic = topics.addObject();
            topic.put("topic_id", ids.trace(t.topicId()));
            ArrayNode partitions = topic.putArray("partitions");
            for (AlterPartitionResponseData.PartitionData p : t.partitions()) {
                ObjectNode partition = partitions.addObject();
                partition.put("partition_index", p.partitionIndex());
                partition.put("error_code", Errors.forCode(p.errorCode()).name());
                partition.put("leader_id", p.leaderId());
                partition.put("leader_epoch", p.leaderEpoch());
                ArrayNode isr = partition.putArray("isr");
                p.isr().forEach(isr::add);
                partition.put("leader_recovery_state", p.leaderRecoveryState());
                partition.put("partition_epoch", p.partitionEpoch());
            }
        }
        return records;
    }

    private List<ApiMessageAndVersion> electLeaders(JsonNode json, ObjectNode output) {
        ElectLeadersRequestData data = new ElectLeadersRequestData().
            setElectionType((byte) json.path("election_type").asInt(0));
        JsonNode wanted = json.path("topic_partitions");
        if (wanted.isNull() || wanted.isMissingNode()) {
            data.setTopicPartitions(null);
        } else {
            for (JsonNode entry : wanted) {
                ElectLeadersRequestData.TopicPartitions topic = new ElectLeadersRequestData.TopicPartitions().
                    setTopic(entry.get(0).asText());
                for (JsonNode id : entry.get(1)) topic.partitions().add(id.asInt());
                data.topicPartitions().add(topic);
            }
        }
        ElectLeadersRequest request = KraftspecRequests.received(data, ELECT_LEADERS_VERSION);
        ElectLeadersResponseData response;
        List<ApiMessageAndVersion> records = List.of();
        if (request.data().topicPartitions() != null && request.data().topicPartitions().isEmpty()) {
            response = new ElectLeadersResponseData();
        } else {
            try {
                ControllerResult<ElectLeadersResponseData> result = replicationControl.electLeaders(request.data());
                response = result.response();
                records = result.records();
            } catch (ApiException e) {
                response = ((ElectLeadersResponse) request.getErrorResponse(0, e)).data();
            }
        }
        ObjectNode json2 = output.putObject("response");
        json2.put("error_code", Errors.forCode(response.errorCode()).name());
        ArrayNode topics = json2.putArray("replica_election_results");
        for (ElectLeadersResponseData.ReplicaElectionResult t : response.replicaElectionResults()) {
            ObjectNode topic = topics.addObject();
            topic.put("topic", t.topic());
            ArrayNode partitions = topic.putArray("partition_results");
            for (ElectLeadersResponseData.PartitionResult p : t.partitionResult()) {
                ObjectNode partition = partitions.addObject();
                partition.put("partition_id", p.partitionId());
                partition.put("error_code", Errors.forCode(p.errorCode()).name());
            }
        }
        return records;
    }

    private static List<ApiMessageAndVersion> periodic(ControllerResult<Boolean> result, ObjectNode output) {
        output.putObject("response").put("run_again", result.response());
        return result.records();
    }

    private List<ApiMessageAndVersion> reassignment(JsonNode input, ObjectNode output) {
        AlterPartitionReassignmentsRequestData.ReassignablePartition partition =
            new AlterPartitionReassignmentsRequestData.ReassignablePartition().
                setPartitionIndex(input.path("partition_id").asInt());
        JsonNode target = input.path("target_replicas");
        partition.setReplicas(target.isNull() || target.isMissingNode() ? null : ints(target));
        AlterPartitionReassignmentsRequestData.ReassignableTopic topic =
            new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(input.path("topic_name").asText());
        topic.partitions().add(partition);
        AlterPartitionReassignmentsRequestData request = new AlterPartitionReassignmentsRequestData();
        KraftspecRequests.setAllowReplicationFactorChange(request,
            input.path("allow_replication_factor_change").asBoolean(true));
        request.topics().add(topic);
        ControllerResult<AlterPartitionReassignmentsResponseData> result =
            replicationControl.alterPartitionReassignments(request);
        short error = result.response().responses().get(0).partitions().get(0).errorCode();
        output.putObject("response").put("error", Errors.forCode(error).name());
        return result.records();
    }

    private List<ApiMessageAndVersion> shutdown(JsonNode input) {
        int brokerId = input.path("broker_id").asInt();
        BrokerRegistration existing = clusterControl.registration(brokerId);
        if (existing == null) {
            throw new HarnessError("handle_broker_shutdown re-registers a registered broker; broker " + brokerId
                + " has no registration (a first registration belongs to the broker component)");
        }
        Uuid incarnation = ids.kafka(input.path("incarnation_id").asText());
        if (incarnation.equals(existing.incarnationId())) {
            throw new HarnessError("handle_broker_shutdown is a new incarnation; " + input.path("incarnation_id")
                + " is broker " + brokerId + "'s current one (Kafka's registerBroker would amend the registration)");
        }
        List<ApiMessageAndVersion> records = new ArrayList<>();
        // ClusterControlManager.registerBroker, new incarnation: the BrokerShutdownHandler's records first ...
        replicationControl.handleBrokerShutdown(brokerId, input.path("is_clean_shutdown").asBoolean(false), records);
        // ... then the RegisterBrokerRecord: the registration's fields, the new incarnation and epoch, fenced.
        MetadataVersion mv = KraftspecRequests.metadataVersion(featureControl);
        ApiMessageAndVersion register = existing.toRecord(new ImageWriterOptions.Builder(mv).build());
        ((RegisterBrokerRecord) register.message()).
            setIncarnationId(incarnation).
            setBrokerEpoch(input.path("epoch").asLong()).
            setFenced(true).
            setInControlledShutdown(false);
        records.add(register);
        return records;
    }

    // ---------------------------------------------------------------- the log

    /** {@code ControllerWriteEvent.run}: replay at consecutive offsets, snapshot the new end, commit. */
    private void append(List<ApiMessageAndVersion> records) {
        if (records.isEmpty()) return;
        for (ApiMessageAndVersion record : records) replay(record.message(), nextWriteOffset++);
        long endOffset = nextWriteOffset - 1;
        snapshotRegistry.idempotentCreateSnapshot(endOffset);
        snapshotRegistry.deleteSnapshotsUpTo(endOffset);
    }

    /** {@code QuorumController.replay}'s dispatch for the record types this component writes. */
    private void replay(ApiMessage message, long offset) {
        switch (org.apache.kafka.common.metadata.MetadataRecordType.fromId(message.apiKey())) {
            case REGISTER_BROKER_RECORD:
                clusterControl.replay((RegisterBrokerRecord) message, offset);
                break;
            case UNREGISTER_BROKER_RECORD:
                clusterControl.replay((org.apache.kafka.common.metadata.UnregisterBrokerRecord) message);
                break;
            case TOPIC_RECORD:
                replicationControl.replay((TopicRecord) message);
                break;
            case PARTITION_RECORD:
                replicationControl.replay((PartitionRecord) message);
                break;
            case CONFIG_RECORD:
                configurationControl.replay((ConfigRecord) message);
                break;
            case PARTITION_CHANGE_RECORD:
                replicationControl.replay((PartitionChangeRecord) message);
                break;
            case FEATURE_LEVEL_RECORD:
                featureControl.replay((FeatureLevelRecord) message);
                break;
            case BROKER_REGISTRATION_CHANGE_RECORD:
                clusterControl.replay((org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord) message);
                break;
            case CLEAR_ELR_RECORD:
                replicationControl.replay((org.apache.kafka.common.metadata.ClearElrRecord) message);
                break;
            default:
                throw new IllegalStateException("the partition harness does not replay " + message.getClass());
        }
    }

    private ObjectNode traceRecord(long offset, ApiMessageAndVersion record) {
        ObjectNode json = Records.toJson(offset, record);
        ObjectNode data = (ObjectNode) json.get("data");
        PartitionChangeRecord change = (PartitionChangeRecord) record.message();
        data.put("topicId", ids.trace(change.topicId()));
        if (change.directories() != null) {
            ArrayNode dirs = data.putArray("directories");
            change.directories().forEach(d -> dirs.add(ids.trace(d)));
        }
        return json;
    }

    // ---------------------------------------------------------------- post-state

    @Override
    public ObjectNode post() {
        ObjectNode post = JSON.createObjectNode();
        ObjectNode brokers = post.putObject("brokers");
        new TreeMap<>(clusterControl.brokerRegistrations()).forEach((id, r) -> {
            ObjectNode b = brokers.putObject(Integer.toString(id));
            b.put("epoch", r.epoch());
            b.put("incarnation_id", ids.trace(r.incarnationId()));
            b.put("fenced", r.fenced());
            b.put("in_controlled_shutdown", r.inControlledShutdown());
        });
        ObjectNode partitions = post.putObject("partitions");
        partitionKeys.forEach((topicId, partitionIds) -> {
            Uuid uuid = ids.kafka(topicId);
            for (int partitionId : partitionIds) {
                PartitionRegistration p = replicationControl.getPartition(uuid, partitionId);
                if (p == null) continue;
                ObjectNode json = partitions.putObject(topicId + ":" + partitionId);
                json.put("leader", p.leader);
                putInts(json, "isr", p.isr);
                json.put("leader_epoch", p.leaderEpoch);
                json.put("partition_epoch", p.partitionEpoch);
                putInts(json, "replicas", p.replicas);
                putInts(json, "removing_replicas", p.removingReplicas);
                putInts(json, "adding_replicas", p.addingReplicas);
                putInts(json, "elr", p.elr);
                putInts(json, "last_known_elr", p.lastKnownElr);
                json.put("leader_recovery_state", p.leaderRecoveryState.value());
            }
        });
        post.set("leaders", leaders.post());
        return post;
    }

    @Override
    public void close() {
        leaders.close();
    }

    // ---------------------------------------------------------------- helpers

    private static void putInts(ObjectNode json, String name, int[] values) {
        ArrayNode array = json.putArray(name);
        for (int v : values) array.add(v);
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> values = new ArrayList<>();
        for (JsonNode v : array) values.add(v.asInt());
        return values;
    }

    private List<Uuid> uuids(JsonNode array) {
        List<Uuid> values = new ArrayList<>();
        for (JsonNode v : array) values.add(ids.kafka(v.asText()));
        return values;
    }

    /** The controller-side managers read no clock on these paths; a fixed one keeps runs reproducible. */
    private static final class FixedTime implements Time {
        @Override
        public long milliseconds() {
            return 0;
        }

        @Override
        public long nanoseconds() {
            return 0;
        }

        @Override
        public void sleep(long ms) {
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long timeoutMs) {
            throw new UnsupportedOperationException("the partition harness never waits");
        }
    }
}
