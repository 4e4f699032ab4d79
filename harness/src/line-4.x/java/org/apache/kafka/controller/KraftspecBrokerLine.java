package org.apache.kafka.controller;

import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.BrokerRegistrationReply;
import org.apache.kafka.metadata.FinalizedControllerFeatures;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.KRaftVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import org.apache.kafka.metadata.KafkaConfigSchema;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;

/**
 * The broker session's calls whose Kafka APIs differ between version lines: Kafka 4.x (sessions in the
 * {@code BrokerHeartbeatTracker}, keyed by broker id and epoch; the shutdown handler told whether the shutdown was
 * clean).
 */
final class KraftspecBrokerLine {
    private KraftspecBrokerLine() {
    }

    interface ShutdownRecords {
        void add(int brokerId, boolean isCleanShutdown, List<ApiMessageAndVersion> records);
    }

    /**
     * As {@code QuorumController} builds it: the brokers' supported ranges from {@code describer}; from 4.1 the
     * kraft.version through a {@code KRaftVersionAccessor} standing in for the Raft client (it takes every upgrade:
     * {@code KafkaRaftClient.upgradeKRaftVersion}'s own checks belong to the raft component).
     */
    static FeatureControlManager featureControl(SnapshotRegistry snapshotRegistry, QuorumFeatures quorumFeatures,
                                                ClusterFeatureSupportDescriber describer,
                                                IntSupplier kraftVersion, IntConsumer upgradeKraftVersion) {
        FeatureControlManager.Builder builder = new FeatureControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(quorumFeatures)
            .setClusterFeatureSupportDescriber(describer);
        for (Method method : FeatureControlManager.Builder.class.getDeclaredMethods()) {
            if (!method.getName().equals("setKRaftVersionAccessor")) continue;
            Class<?> accessor = method.getParameterTypes()[0];
            Object raft = Proxy.newProxyInstance(accessor.getClassLoader(), new Class<?>[] {accessor}, (proxy, m, args) -> {
                switch (m.getName()) {
                    case "kraftVersion":
                        return KRaftVersion.fromFeatureLevel((short) kraftVersion.getAsInt());
                    case "upgradeKRaftVersion":
                        if (!(Boolean) args[2]) upgradeKraftVersion.accept(((KRaftVersion) args[1]).featureLevel());
                        return null;
                    default:
                        throw new UnsupportedOperationException(m.getName());
                }
            });
            try {
                method.setAccessible(true);
                method.invoke(builder, raft);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }
        return builder.build();
    }

    /** {@code ConfigurationControlManager.updateFeatures}: 4.1 added the claim epoch (the Raft client's, unused here). */
    @SuppressWarnings("unchecked")
    static ControllerResult<ApiError> updateFeatures(ConfigurationControlManager configurationControl,
                                                    Map<String, Short> updates, Map<String, Byte> upgradeTypes,
                                                    boolean validateOnly) {
        Map<String, FeatureUpdate.UpgradeType> types = new HashMap<>();
        upgradeTypes.forEach((name, code) -> types.put(name, FeatureUpdate.UpgradeType.fromCode(code)));
        for (Method method : ConfigurationControlManager.class.getDeclaredMethods()) {
            if (!method.getName().equals("updateFeatures")) continue;
            try {
                method.setAccessible(true);
                Object result = method.getParameterCount() == 4
                    ? method.invoke(configurationControl, updates, types, validateOnly, 1)
                    : method.invoke(configurationControl, updates, types, validateOnly);
                return (ControllerResult<ApiError>) result;
            } catch (InvocationTargetException e) {
                if (e.getCause() instanceof RuntimeException) throw (RuntimeException) e.getCause();
                throw new IllegalStateException(e.getCause());
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
        }
        throw new IllegalStateException("no ConfigurationControlManager.updateFeatures");
    }

    static ConfigurationControlManager configurationControl(SnapshotRegistry snapshotRegistry,
                                                            KafkaConfigSchema configSchema,
                                                            FeatureControlManager featureControl) {
        return new ConfigurationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setKafkaConfigSchema(configSchema)
            .setStaticConfig(Map.of())
            .setNodeId(0)
            .setFeatureControl(featureControl)
            .build();
    }

    /** As {@code QuorumController} builds it (ELR follows the finalized eligible.leader.replicas.version). */
    static ReplicationControlManager replicationControl(SnapshotRegistry snapshotRegistry,
                                                        ConfigurationControlManager configurationControl,
                                                        ClusterControlManager clusterControl,
                                                        FeatureControlManager featureControl) {
        return new ReplicationControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setMaxElectionsPerImbalance(ReplicationControlManager.MAX_ELECTIONS_PER_IMBALANCE)
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
            .setBrokerShutdownHandler(shutdown::add)
            .build();
    }

    /** {@code QuorumController.handleBrokerShutdown}. */
    static void handleBrokerShutdown(ReplicationControlManager replication, int brokerId, boolean isCleanShutdown,
                                     List<ApiMessageAndVersion> records) {
        replication.handleBrokerShutdown(brokerId, isCleanShutdown, records);
    }

    static ControllerResult<BrokerRegistrationReply> registerBroker(
        ClusterControlManager clusterControl, BrokerRegistrationRequestData request, long newBrokerEpoch,
        FinalizedControllerFeatures features, boolean cleanShutdownDetectionEnabled
    ) {
        return clusterControl.registerBroker(request, newBrokerEpoch, features, cleanShutdownDetectionEnabled);
    }

    /** {@code QuorumController.replay} of the record types 3.9 does not have: ClearElrRecord. */
    static boolean replay(ReplicationControlManager replication, org.apache.kafka.common.protocol.ApiMessage message) {
        if (message instanceof org.apache.kafka.common.metadata.ClearElrRecord) {
            replication.replay((org.apache.kafka.common.metadata.ClearElrRecord) message);
            return true;
        }
        return false;
    }

    static long metadataOffset(BrokerHeartbeatManager.BrokerHeartbeatState state) {
        return state.metadataOffset();
    }

    /** One run of the stale-broker task: its records and the expired session it took ([id, epoch], or null). */
    static final class StaleBrokerRun {
        final List<ApiMessageAndVersion> records;
        final List<Long> expired;

        StaleBrokerRun(List<ApiMessageAndVersion> records, List<Long> expired) {
            this.records = records;
            this.expired = expired;
        }
    }

    /**
     * {@code ReplicationControlManager.maybeFenceOneStaleBroker}; which session it took is read off the tracker (the
     * one entry gone: the first expired one in its map's order).
     */
    static StaleBrokerRun maybeFenceOneStaleBroker(ReplicationControlManager replication,
                                                   ClusterControlManager clusterControl) {
        Set<List<Long>> before = new HashSet<>(sessions(clusterControl).keySet());
        ControllerResult<Boolean> result = replication.maybeFenceOneStaleBroker();
        before.removeAll(sessions(clusterControl).keySet());
        if (before.size() > 1) throw new IllegalStateException("one run of the task removed " + before);
        return new StaleBrokerRun(result.records(), before.isEmpty() ? null : before.iterator().next());
    }

    static boolean trackBrokerHeartbeat(ClusterControlManager clusterControl, int brokerId, long brokerEpoch) {
        return clusterControl.trackBrokerHeartbeat(brokerId, brokerEpoch);
    }

    /** The tracker's sessions: [id, epoch] to the last contact in nanoseconds (its map is private). */
    static Map<List<Long>, Long> sessions(ClusterControlManager clusterControl) {
        Map<List<Long>, Long> sessions = new HashMap<>();
        contactTimes(clusterControl).forEach((key, ns) -> sessions.put(List.of((long) key.id(), key.epoch()), ns));
        return sessions;
    }

    static void setSessions(ClusterControlManager clusterControl, Map<List<Long>, Long> sessions) {
        Map<BrokerIdAndEpoch, Long> contactTimes = contactTimes(clusterControl);
        contactTimes.clear();
        sessions.forEach((key, ns) -> contactTimes.put(new BrokerIdAndEpoch(key.get(0).intValue(), key.get(1)), ns));
    }

    @SuppressWarnings("unchecked")
    private static Map<BrokerIdAndEpoch, Long> contactTimes(ClusterControlManager clusterControl) {
        BrokerHeartbeatTracker tracker = clusterControl.heartbeatManager().tracker();
        try {
            Field field = BrokerHeartbeatTracker.class.getDeclaredField("contactTimes");
            field.setAccessible(true);
            return (Map<BrokerIdAndEpoch, Long>) field.get(tracker);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot read the BrokerHeartbeatTracker's contact times", e);
        }
    }
}
