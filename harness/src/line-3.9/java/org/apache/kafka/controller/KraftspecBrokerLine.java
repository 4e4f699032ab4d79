package org.apache.kafka.controller;

import io.kraftspec.harness.HarnessError;

import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerRegistrationReply;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;

/**
 * The broker session's calls whose Kafka APIs differ between version lines: Kafka 3.9. Its
 * {@code BrokerHeartbeatManager} keeps one last contact time per registered broker ({@code lastContactNs}, set by
 * every {@code touch}: a heartbeat with the current epoch, a registration, the replay of a broker record,
 * activation), which the session reports as the broker's session {@code "ID:-1"}; a session is valid while the
 * broker is unfenced and not past the timeout, and the stale-broker task fences the unfenced broker with the oldest
 * contact. There is no lock-free heartbeat tracking ({@code trackBrokerHeartbeat} came in 4.0): a heartbeat only
 * touches the broker inside the write event, after its epoch is checked. The unclean-shutdown handler writes
 * nothing below the ELR metadata.version (4.0-IV1, beyond 3.9's), and ELR is the (default off)
 * {@code eligible.leader.replicas.enable} config.
 */
final class KraftspecBrokerLine {
    static final long LEGACY_SESSION_EPOCH = -1L;

    private KraftspecBrokerLine() {
    }

    interface ShutdownRecords {
        void add(int brokerId, boolean isCleanShutdown, List<ApiMessageAndVersion> records);
    }

    static FeatureControlManager featureControl(SnapshotRegistry snapshotRegistry, QuorumFeatures quorumFeatures,
                                                ClusterFeatureSupportDescriber describer,
                                                IntSupplier kraftVersion, IntConsumer upgradeKraftVersion) {
        return new FeatureControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(quorumFeatures)
            .setClusterFeatureSupportDescriber(describer)
            .build();
    }

    /** 3.9 answers UpdateFeatures per feature ({@code FeatureControlManager.updateFeatures}): not expressible. */
    static ControllerResult<ApiError> updateFeatures(ConfigurationControlManager configurationControl,
                                                    Map<String, Short> updates, Map<String, Byte> upgradeTypes,
                                                    boolean validateOnly) {
        throw new HarnessError("Kafka 3.9 answers UpdateFeatures per feature, which the trace format does not model");
    }

    static ConfigurationControlManager configurationControl(SnapshotRegistry snapshotRegistry,
                                                            KafkaConfigSchema configSchema,
                                                            FeatureControlManager featureControl) {
        return new ConfigurationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setKafkaConfigSchema(configSchema)
            .setStaticConfig(Map.of())
            .setNodeId(0)
            .build();
    }

    static ReplicationControlManager replicationControl(SnapshotRegistry snapshotRegistry,
                                                        ConfigurationControlManager configurationControl,
                                                        ClusterControlManager clusterControl,
                                                        FeatureControlManager featureControl) {
        return new ReplicationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
            .setEligibleLeaderReplicasEnabled(false)
            .setConfigurationControl(configurationControl)
            .setClusterControl(clusterControl)
            .setFeatureControl(featureControl)
            .build();
    }

    static ClusterControlManager clusterControl(String clusterId, Time time, SnapshotRegistry snapshotRegistry,
                                                long sessionTimeoutNs, FeatureControlManager featureControl,
                                                ShutdownRecords shutdown) {
        return new ClusterControlManager.Builder()
            .setClusterId(clusterId)
            .setTime(time)
            .setSnapshotRegistry(snapshotRegistry)
            .setSessionTimeoutNs(sessionTimeoutNs)
            .setFeatureControlManager(featureControl)
            .setBrokerUncleanShutdownHandler((brokerId, records) -> shutdown.add(brokerId, false, records))
            .build();
    }

    /** {@code QuorumController.handleUncleanBrokerShutdown} (3.9 tells no clean shutdown apart). */
    static void handleBrokerShutdown(ReplicationControlManager replication, int brokerId, boolean isCleanShutdown,
                                     List<ApiMessageAndVersion> records) {
        replication.handleBrokerUncleanShutdown(brokerId, records);
    }

    /** 3.9's {@code registerBroker} has no clean-shutdown detection. */
    static ControllerResult<BrokerRegistrationReply> registerBroker(
        ClusterControlManager clusterControl, BrokerRegistrationRequestData request, long newBrokerEpoch,
        FinalizedControllerFeatures features, boolean cleanShutdownDetectionEnabled
    ) {
        return clusterControl.registerBroker(request, newBrokerEpoch, features);
    }

    /** 3.9 tracks nothing before the write event, which an inactive controller refuses (NOT_CONTROLLER). */
    static boolean trackBrokerHeartbeat(ClusterControlManager clusterControl, int brokerId, long brokerEpoch) {
        try {
            clusterControl.heartbeatManager();
            return true;
        } catch (RuntimeException e) {
            return false;
        }
    }

    static boolean replay(ReplicationControlManager replication, org.apache.kafka.common.protocol.ApiMessage message) {
        return false;
    }

    static long metadataOffset(BrokerHeartbeatManager.BrokerHeartbeatState state) {
        return state.metadataOffset;
    }

    static final class StaleBrokerRun {
        final List<ApiMessageAndVersion> records;
        final List<Long> expired;

        StaleBrokerRun(List<ApiMessageAndVersion> records, List<Long> expired) {
            this.records = records;
            this.expired = expired;
        }
    }

    /** {@code maybeFenceOneStaleBroker}; the broker it fences is {@code findOneStaleBroker}'s (asked first: it only reads). */
    static StaleBrokerRun maybeFenceOneStaleBroker(ReplicationControlManager replication,
                                                   ClusterControlManager clusterControl) {
        Optional<Integer> stale = clusterControl.heartbeatManager().findOneStaleBroker();
        ControllerResult<Void> result = replication.maybeFenceOneStaleBroker();
        return new StaleBrokerRun(result.records(),
            stale.map(id -> List.of((long) id, LEGACY_SESSION_EPOCH)).orElse(null));
    }

    /** Every broker's last contact, as its session [id, -1]. */
    static Map<List<Long>, Long> sessions(ClusterControlManager clusterControl) {
        Map<List<Long>, Long> sessions = new HashMap<>();
        for (BrokerHeartbeatManager.BrokerHeartbeatState state : clusterControl.heartbeatManager().brokers()) {
            sessions.put(List.of((long) state.id(), LEGACY_SESSION_EPOCH), state.lastContactNs);
        }
        return sessions;
    }

    /**
     * Soft state from outside (the standard states'): not on 3.9, whose heartbeat manager links its unfenced brokers
     * in contact order as they are touched; an explicit initial state gives Kafka 3.9 the same cluster.
     */
    static void setSessions(ClusterControlManager clusterControl, Map<List<Long>, Long> sessions) {
        throw new io.kraftspec.harness.HarnessError("the harness sets no soft state on Kafka 3.9's heartbeat manager "
            + "(a standard state's sessions): state the cluster explicitly");
    }
}
