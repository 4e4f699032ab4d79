package org.apache.kafka.controller;

import org.apache.kafka.common.message.ControllerRegistrationRequestData;
import org.apache.kafka.common.metadata.BrokerRegistrationChangeRecord;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.RegisterControllerRecord;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.ControllerRegistration;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.timeline.SnapshotRegistry;

import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The active controller's hard state for the kraftspec {@code controller} component: Kafka's own
 * {@link FeatureControlManager} and {@link ClusterControlManager}, built as Kafka's {@code ClusterControlManagerTest}
 * builds them, and the package-private calls the harness needs ({@code registerController}, the controller
 * registrations, the metadata.version). {@link #replay} dispatches a record to the manager that owns it, as
 * {@code QuorumController.replay} does.
 *
 * <p>The calls whose form changed between Kafka 3.9 and 4.4 go through reflection: the {@code LogContext} (moved in
 * 4.4), the broker shutdown handler's setter (3.9: {@code setBrokerUncleanShutdownHandler}), the metadata.version
 * (an {@code Optional} from 4.3) and the registrations map (no accessor in 3.9).
 */
public final class KraftspecControllerControl {
    private final FeatureControlManager featureControl;
    private final ClusterControlManager clusterControl;

    public KraftspecControllerControl(String clusterId, Time time, Object logContext) throws Exception {
        SnapshotRegistry snapshotRegistry = (SnapshotRegistry) SnapshotRegistry.class.getConstructors()[0]
            .newInstance(logContext);
        Map<String, VersionRange> supported = new HashMap<>();
        supported.put(MetadataVersion.FEATURE_NAME, VersionRange.of(MetadataVersion.values()[0].featureLevel(),
            MetadataVersion.latestTesting().featureLevel()));
        featureControl = new FeatureControlManager.Builder()
            .setSnapshotRegistry(snapshotRegistry)
            .setQuorumFeatures(new QuorumFeatures(0, supported, List.of(0)))
            .build();
        ClusterControlManager.Builder builder = new ClusterControlManager.Builder()
            .setClusterId(clusterId)
            .setTime(time)
            .setSnapshotRegistry(snapshotRegistry)
            .setSessionTimeoutNs(9_000_000_000L)
            .setFeatureControlManager(featureControl);
        for (Method setter : ClusterControlManager.Builder.class.getDeclaredMethods()) {
            // setBrokerShutdownHandler (4.x) / setBrokerUncleanShutdownHandler (3.9): a handler adding no records
            if (setter.getName().startsWith("setBroker") && setter.getName().endsWith("ShutdownHandler")) {
                Class<?> handler = setter.getParameterTypes()[0];
                setter.setAccessible(true);
                setter.invoke(builder, Proxy.newProxyInstance(handler.getClassLoader(), new Class<?>[] {handler},
                    (self, method, args) -> method.getDeclaringClass() == Object.class
                        ? (method.getName().equals("equals") ? self == args[0]
                            : method.getName().equals("hashCode") ? System.identityHashCode(self) : "handler")
                        : null));
            }
        }
        clusterControl = builder.build();
    }

    /** {@code QuorumController.replay}'s dispatch for the record types a controller trace holds. */
    public void replay(ApiMessage message, long offset) {
        if (message instanceof FeatureLevelRecord) {
            featureControl.replay((FeatureLevelRecord) message);
        } else if (message instanceof RegisterBrokerRecord) {
            clusterControl.replay((RegisterBrokerRecord) message, offset);
        } else if (message instanceof BrokerRegistrationChangeRecord) {
            clusterControl.replay((BrokerRegistrationChangeRecord) message);
        } else if (message instanceof RegisterControllerRecord) {
            clusterControl.replay((RegisterControllerRecord) message);
        } else {
            throw new IllegalArgumentException("the controller harness does not replay " + message.getClass().getSimpleName());
        }
    }

    /** {@code ClusterControlManager.registerController}: the records of one registration (or its exception). */
    public List<ApiMessageAndVersion> registerController(ControllerRegistrationRequestData request) {
        return clusterControl.registerController(request).records();
    }

    /** The controller registrations ({@code ClusterControlManager.controllerRegistrations}, a timeline map). */
    @SuppressWarnings("unchecked")
    public Map<Integer, ControllerRegistration> controllerRegistrations() throws Exception {
        java.lang.reflect.Field field = ClusterControlManager.class.getDeclaredField("controllerRegistrations");
        field.setAccessible(true);
        return (Map<Integer, ControllerRegistration>) field.get(clusterControl);
    }

    /** The finalized metadata.version ({@code FeatureControlManager.metadataVersion}: an Optional from 4.3). */
    public Optional<MetadataVersion> metadataVersion() throws Exception {
        Method method = FeatureControlManager.class.getDeclaredMethod("metadataVersion");
        method.setAccessible(true);
        Object value = method.invoke(featureControl);
        if (value instanceof Optional) return ((Optional<?>) value).map(MetadataVersion.class::cast);
        return Optional.ofNullable((MetadataVersion) value);
    }
}
