package io.kraftspec.harness;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.loader.LoaderManifest;
import org.apache.kafka.metadata.ListenerInfo;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.queue.KafkaEventQueue;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The Kafka objects of the controller component, found and built by reflection, so that one source compiles
 * and runs against every Kafka the harness covers (3.9 to 4.4): between them these classes moved (Scala to Java,
 * {@code kafka.server} to {@code org.apache.kafka.server.*}), changed constructors ({@code KafkaApis},
 * {@code ControllerApis}, {@code RequestChannel}, the quota managers) and member names (a Scala private field is
 * {@code kafka$server$ControllerRegistrationManager$$metadataVersion}, the Java one {@code metadataVersion}).
 *
 * <p>Kafka's constructors get Kafka's own collaborators where DescribeCluster and ControllerRegistration use them
 * (the metadata cache, the registrations publisher, a request-quota manager with quotas off, the request channel)
 * and small harness implementations of Kafka interfaces whose answers the trace gives (the authorizer, the Raft
 * leader, the finalized metadata.version, the {@code Controller} behind ControllerApis); every other argument is
 * null (Scala {@code Option}s: {@code None}).
 */
final class ControllerKafka {
    private ControllerKafka() {
    }

    // ------------------------------------------------------------------------------------------------ reflection

    static Class<?> anyClass(String... names) {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // try the next name
            }
        }
        throw new HarnessError("this Kafka has none of " + Arrays.toString(names));
    }

    static Optional<Class<?>> optionalClass(String name) {
        try {
            return Optional.of(Class.forName(name));
        } catch (ClassNotFoundException e) {
            return Optional.empty();
        }
    }

    /** The public constructor with the most parameters, each argument chosen by {@code fill}. */
    static Object construct(Class<?> type, Function<Parameter, Object> fill) {
        Constructor<?> constructor = Arrays.stream(type.getConstructors())
            .max(Comparator.comparingInt(Constructor::getParameterCount))
            .orElseThrow(() -> new HarnessError(type + " has no public constructor"));
        Object[] args = Arrays.stream(constructor.getParameters()).map(fill).toArray();
        try {
            return constructor.newInstance(args);
        } catch (InvocationTargetException e) {
            throw rethrow(e.getCause());
        } catch (ReflectiveOperationException | IllegalArgumentException e) {
            throw new HarnessError("cannot build " + type.getName() + " with " + Arrays.toString(args) + ": " + e);
        }
    }

    /**
     * Calls the method {@code name} of {@code target} (a class: a static method) whose parameters accept
     * {@code args} (private ones too). An exception the method throws propagates as it is (Kafka's own); a method
     * the harness cannot find or call is a {@link HarnessError}.
     */
    static Object call(Object target, String name, Object... args) {
        Class<?> type = target instanceof Class ? (Class<?>) target : target.getClass();
        Object receiver = target instanceof Class ? null : target;
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            for (Method method : c.getDeclaredMethods()) {
                if (method.getName().equals(name) && accepts(method.getParameterTypes(), args)) {
                    try {
                        method.setAccessible(true);
                        return method.invoke(receiver, args);
                    } catch (InvocationTargetException e) {
                        throw rethrow(e.getCause());
                    } catch (IllegalAccessException | IllegalArgumentException e) {
                        throw new HarnessError("cannot call " + method + ": " + e);
                    }
                }
            }
        }
        throw new HarnessError(type.getName() + " has no method " + name + " taking " + Arrays.toString(args));
    }

    private static final Map<Class<?>, Class<?>> BOXES = Map.of(boolean.class, Boolean.class, int.class,
        Integer.class, long.class, Long.class, short.class, Short.class, byte.class, Byte.class, double.class,
        Double.class, float.class, Float.class, char.class, Character.class);

    static boolean accepts(Class<?>[] types, Object[] args) {
        if (types.length != args.length) return false;
        for (int i = 0; i < types.length; i++) {
            Class<?> t = types[i].isPrimitive() ? BOXES.get(types[i]) : types[i];
            if (args[i] == null ? types[i].isPrimitive() : !t.isInstance(args[i])) return false;
        }
        return true;
    }

    static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException) return (RuntimeException) t;
        if (t instanceof Error) throw (Error) t;
        return new IllegalStateException(t);
    }

    /** The declared field whose name is {@code name} or ends with {@code $name} or {@code $_name} (Scala's
     * private fields: {@code kafka$server$ControllerRegistrationManager$$_channelManager}). */
    static Field field(Class<?> type, String name) {
        for (Field f : type.getDeclaredFields()) {
            if (f.getName().equals(name) || f.getName().endsWith("$" + name) || f.getName().endsWith("$_" + name)) {
                f.setAccessible(true);
                return f;
            }
        }
        throw new HarnessError(type.getName() + " has no field " + name);
    }

    static Object get(Object target, String name) {
        try {
            return field(target.getClass(), name).get(target);
        } catch (IllegalAccessException e) {
            throw new HarnessError(String.valueOf(e));
        }
    }

    static void set(Object target, String name, Object value) {
        try {
            field(target.getClass(), name).set(target, value);
        } catch (IllegalAccessException e) {
            throw new HarnessError(String.valueOf(e));
        }
    }

    static Object none() {
        return scala.Option.empty();
    }

    /** A Java {@code Optional}, a Scala {@code Option} or a plain value, unwrapped (null when empty). */
    static Object unwrap(Object value) {
        if (value instanceof Optional) return ((Optional<?>) value).orElse(null);
        if (value instanceof scala.Option) return ((scala.Option<?>) value).isDefined() ? ((scala.Option<?>) value).get() : null;
        return value;
    }

    /** A value of the parameter's type with nothing in it: None, Optional.empty, or null. */
    static Object empty(Parameter p) {
        Class<?> t = p.getType();
        if (t == scala.Option.class) return none();
        if (t == Optional.class) return Optional.empty();
        if (t == boolean.class) return false;
        if (t == int.class) return 0;
        if (t == long.class) return 0L;
        if (t == short.class) return (short) 0;
        if (t == double.class) return 0.0;
        return null;
    }

    /** A proxy implementing {@code type} that answers the methods {@code answers} names; others fail loudly. */
    static Object proxy(Class<?> type, Map<String, Function<Object[], Object>> answers) {
        return Proxy.newProxyInstance(ControllerKafka.class.getClassLoader(), new Class<?>[] {type},
            (self, method, args) -> {
                if (method.getDeclaringClass() == Object.class) {
                    switch (method.getName()) {
                        case "equals": return self == args[0];
                        case "hashCode": return System.identityHashCode(self);
                        default: return type.getSimpleName() + " (kraftspec harness)";
                    }
                }
                Function<Object[], Object> answer = answers.get(method.getName());
                if (answer == null) {
                    throw fault(new UnsupportedOperationException(type.getSimpleName() + "." + method.getName()
                        + " is not used by the controller harness"));
                }
                try {
                    return answer.apply(args == null ? new Object[0] : args);
                } catch (HarnessError e) {
                    throw fault(e);
                }
            });
    }

    private static volatile RuntimeException fault;

    /**
     * A failure of the harness's own stand-ins for Kafka's collaborators, kept so that Kafka's error handling
     * (which answers UNKNOWN_SERVER_ERROR for an unexpected exception) cannot pass it off as Kafka's answer:
     * {@link #checkFaults} turns it into a {@link HarnessError} after the call into Kafka.
     */
    static RuntimeException fault(RuntimeException e) {
        fault = e;
        return e;
    }

    static void checkFaults() {
        RuntimeException e = fault;
        fault = null;
        if (e != null) throw new HarnessError("the harness failed inside Kafka's call: " + e);
    }

    // ------------------------------------------------------------------------------------------------ objects

    /** The objects the Apis read; one set per JVM, their contents set by the session before each request. */
    static final class Shared {
        final ControllerSession.HarnessAuthorizer authorizer = new ControllerSession.HarnessAuthorizer();
        final Object metadataCache;
        final org.apache.kafka.image.publisher.ControllerRegistrationsPublisher publisher =
            new org.apache.kafka.image.publisher.ControllerRegistrationsPublisher();
        final Metrics metrics = new Metrics();
        final Object requestMetrics;
        final Object requestChannel;
        final Object quotas;
        volatile LeaderAndEpoch raftLeader = new LeaderAndEpoch(java.util.OptionalInt.empty(), 0);
        volatile MetadataVersion finalizedMetadataVersion = MetadataVersion.latestProduction();
        /** The session's answer to {@code Controller.registerController} (the quorum controller's write event). */
        volatile ControllerSession.Registrar registrar;

        Shared() {
            Class<?> cacheType = anyClass("org.apache.kafka.metadata.KRaftMetadataCache",
                "kafka.server.metadata.KRaftMetadataCache");
            Object kraftVersion = anyClass("org.apache.kafka.server.common.KRaftVersion").getEnumConstants()[1];
            metadataCache = construct(cacheType, p -> p.getType() == int.class ? 1
                : p.getType() == Supplier.class ? (Supplier<Object>) () -> kraftVersion : empty(p));
            Class<?> metricsType = anyClass("org.apache.kafka.network.metrics.RequestChannelMetrics",
                "kafka.network.RequestChannel$Metrics");
            try {
                // every API a controller listens to: ControllerRegistration and DescribeCluster among them
                requestMetrics = metricsType.getConstructor(ApiMessageType.ListenerType.class)
                    .newInstance(ApiMessageType.ListenerType.CONTROLLER);
            } catch (ReflectiveOperationException e) {
                throw new HarnessError("cannot build the request metrics: " + e);
            }
            requestChannel = construct(anyClass("kafka.network.RequestChannel"), p ->
                p.getType() == int.class ? 10 : p.getType() == String.class ? "kraftspec"
                    : p.getType() == Time.class ? Time.SYSTEM : p.getType() == metricsType ? requestMetrics : empty(p));
            Class<?> requestQuotasType = anyClass("kafka.server.ClientRequestQuotaManager",
                "org.apache.kafka.server.quota.ClientRequestQuotaManager");
            int[] ints = {11, 1}; // numQuotaSamples, quotaWindowSizeSeconds: the defaults, for a config without them
            int[] next = {0};
            Object quotaConfig = construct(anyClass("org.apache.kafka.server.config.ClientQuotaManagerConfig",
                "kafka.server.ClientQuotaManagerConfig"), p -> p.getType() == int.class ? ints[next[0]++ % 2] : empty(p));
            Object requestQuotas = construct(requestQuotasType, p -> p.getType() == quotaConfig.getClass() ? quotaConfig
                : p.getType() == Metrics.class ? metrics : p.getType() == Time.class ? Time.SYSTEM
                : p.getType() == String.class ? "kraftspec-" : empty(p));
            quotas = construct(anyClass("kafka.server.QuotaFactory$QuotaManagers",
                "org.apache.kafka.server.quota.QuotaFactory$QuotaManagers"),
                p -> p.getType() == requestQuotasType ? requestQuotas : empty(p));
        }

        /** {@code Option[Authorizer]} (3.9, 4.0) or {@code Option[Plugin[Authorizer]]} (4.1+). */
        Object authorizerOption(Parameter p) {
            if (!p.getParameterizedType().getTypeName().contains("Plugin")) return scala.Option.apply(authorizer);
            Object plugin = call(anyClass("org.apache.kafka.common.internals.Plugin"), "wrapInstance",
                authorizer, metrics, "authorizer.class.name"); // wrapInstance(T, Metrics, String)
            return scala.Option.apply(plugin);
        }

        void setImage(MetadataImage image) {
            call(metadataCache, "setImage", image);
        }

        private static Object config(String roles) {
            Properties props = new Properties();
            props.setProperty("process.roles", roles);
            props.setProperty("node.id", roles.equals("broker") ? "2" : "1"); // a broker is not among the voters
            props.setProperty("controller.listener.names", "CONTROLLER");
            props.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            props.setProperty("log.dirs", System.getProperty("java.io.tmpdir") + "/kraftspec-harness-unused");
            if (roles.equals("broker")) {
                props.setProperty("listeners", "PLAINTEXT://localhost:9092");
                props.setProperty("controller.quorum.voters", "1@localhost:9093");
            } else {
                props.setProperty("listeners", "CONTROLLER://localhost:9093");
                props.setProperty("controller.quorum.voters", "1@localhost:9093");
            }
            return call(anyClass("kafka.server.KafkaConfig"), "fromProps", props);
        }

        /** A broker's {@code KafkaApis} for one cluster id (a constructor argument). */
        Object brokerApis(String clusterId) {
            Object config = config("broker");
            return construct(anyClass("kafka.server.KafkaApis"), p -> fill(p, clusterId, config, "BROKER"));
        }

        /** A controller's {@code ControllerApis} for one cluster id. */
        Object controllerApis(String clusterId) {
            Object config = config("controller");
            return construct(anyClass("kafka.server.ControllerApis"), p -> fill(p, clusterId, config, "CONTROLLER"));
        }

        private Object fill(Parameter p, String clusterId, Object config, String listenerType) {
            Class<?> t = p.getType();
            String name = t.getSimpleName();
            if (t.isInstance(requestChannel)) return requestChannel;
            if (t == int.class) return 1;
            if (t.isInstance(config)) return config;
            if (t.isInstance(metadataCache)) return metadataCache;
            if (t == Metrics.class) return metrics;
            if (t == scala.Option.class && p.getParameterizedType().getTypeName().contains("Authorizer")) {
                return authorizerOption(p);
            }
            if (t.isInstance(quotas)) return quotas;
            if (t == String.class) return clusterId;
            if (t == Time.class) return Time.SYSTEM;
            if (t.isInstance(publisher)) return publisher;
            if (name.equals("ApiVersionManager")) return apiVersionManager(t, listenerType);
            if (name.equals("RaftManager")) return raftManager(t);
            if (name.equals("Controller")) return controller(t);
            return empty(p);
        }

        private Object apiVersionManager(Class<?> type, String listenerType) {
            return proxy(type, Map.of(
                "features", args -> finalizedFeatures(finalizedMetadataVersion),
                "listenerType", args -> ApiMessageType.ListenerType.valueOf(listenerType),
                "enableUnstableLastVersion", args -> false));
        }

        private Object raftManager(Class<?> type) {
            Object client = proxy(org.apache.kafka.raft.RaftClient.class, Map.of("leaderAndEpoch", args -> raftLeader));
            return proxy(type, Map.of("leaderAndEpoch", args -> raftLeader, "client", args -> client));
        }

        private Object controller(Class<?> type) {
            return proxy(type, Map.of("registerController", args -> {
                ControllerSession.Registrar r = registrar;
                if (r == null) throw fault(new UnsupportedOperationException("no registration expected"));
                return r.register((org.apache.kafka.controller.ControllerRequestContext) args[0],
                    (org.apache.kafka.common.message.ControllerRegistrationRequestData) args[1]);
            }));
        }
    }

    static Object finalizedFeatures(MetadataVersion mv) {
        Class<?> type = anyClass("org.apache.kafka.server.common.FinalizedFeatures");
        try {
            return type.getMethod("of", MetadataVersion.class, Map.class, long.class).invoke(null, mv, Map.of(), 0L);
        } catch (NoSuchMethodException e) {
            // before 4.4: a constructor
        } catch (ReflectiveOperationException e) {
            throw new HarnessError(String.valueOf(e));
        }
        return construct(type,
            p -> p.getType() == MetadataVersion.class ? mv : p.getType() == Map.class ? Map.of() : empty(p));
    }

    static Object requestLocal() {
        Optional<Class<?>> java = optionalClass("org.apache.kafka.server.common.RequestLocal");
        if (java.isPresent()) return call(java.get(), "noCaching");
        return call(anyClass("kafka.server.RequestLocal"), "NoCaching"); // 3.9: Scala's, a static forwarder
    }

    static Object newLogContext(String prefix) {
        Class<?> type = anyClass("org.apache.kafka.common.utils.LogContext",
            "org.apache.kafka.common.utils.internals.LogContext");
        try {
            return type.getConstructor(String.class).newInstance(prefix);
        } catch (ReflectiveOperationException e) {
            throw new HarnessError(String.valueOf(e));
        }
    }

    // ------------------------------------------------------------------------------------------------ the manager

    /**
     * Kafka's {@code ControllerRegistrationManager} ({@code kafka.server}, Scala, to 4.3;
     * {@code org.apache.kafka.server.controller}, Java, from 4.4) through its members, whatever their names.
     */
    static final class Manager {
        final Object manager;
        final Class<?> type;
        /** 4.3+: the response handler enqueues a {@code RequestCompleteEvent}; earlier ones run it on the caller. */
        final boolean respondsOnQueue;
        private final Class<?> channelType;

        Manager(int nodeId, String clusterId, Time time, Map<String, VersionRange> features, Uuid incarnationId,
                ListenerInfo listeners) {
            type = anyClass("kafka.server.ControllerRegistrationManager",
                "org.apache.kafka.server.controller.ControllerRegistrationManager");
            respondsOnQueue = optionalClass(type.getName() + "$RequestCompleteEvent").isPresent();
            channelType = anyClass("org.apache.kafka.server.common.NodeToControllerChannelManager",
                "org.apache.kafka.server.NodeToControllerChannelManager");
            // Java (4.4+) has a constructor taking Kafka's default backoff itself; Scala's only constructor takes
            // it as a default argument.
            Constructor<?> constructor = Arrays.stream(type.getConstructors())
                .sorted(Comparator.comparingInt((Constructor<?> c) -> Arrays.stream(c.getParameterTypes())
                    .anyMatch(t -> t.getSimpleName().equals("ExponentialBackoff")) ? 0 : 1)
                    .thenComparingInt(Constructor::getParameterCount).reversed())
                .findFirst().orElseThrow();
            Parameter[] params = constructor.getParameters();
            long strings = Arrays.stream(params).filter(p -> p.getType() == String.class).count();
            Object[] args = new Object[params.length];
            boolean firstString = true;
            for (int i = 0; i < params.length; i++) {
                Class<?> t = params[i].getType();
                if (t == int.class) {
                    args[i] = nodeId;
                } else if (t == String.class) {
                    args[i] = strings > 1 && firstString ? clusterId : "kraftspec-controller-";
                    firstString = false;
                } else if (t == Time.class) {
                    args[i] = time;
                } else if (t == Map.class) {
                    args[i] = features;
                } else if (t == Uuid.class) {
                    args[i] = incarnationId;
                } else if (t == ListenerInfo.class) {
                    args[i] = listeners;
                } else if (t == boolean.class) {
                    args[i] = false; // 3.9's zkMigrationEnabled
                } else if (t.getSimpleName().equals("ExponentialBackoff")) {
                    // Kafka's default: Scala's default argument, new ExponentialBackoff(100, 2, 120000L, 0.02)
                    args[i] = call(type, "$lessinit$greater$default$" + (i + 1));
                } else {
                    args[i] = empty(params[i]);
                }
            }
            try {
                manager = constructor.newInstance(args);
            } catch (InvocationTargetException e) {
                throw rethrow(e.getCause());
            } catch (ReflectiveOperationException e) {
                throw new HarnessError("cannot build the ControllerRegistrationManager: " + e);
            }
        }

        KafkaEventQueue eventQueue() {
            return (KafkaEventQueue) call(manager, "eventQueue");
        }

        /** The channel the manager sends through: a proxy of Kafka's channel-manager interface. */
        Object channel(Map<String, Function<Object[], Object>> answers) {
            return proxy(channelType, answers);
        }

        void start(Object channel) {
            call(manager, "start", channel);
        }

        void onMetadataUpdate(MetadataDelta delta, MetadataImage image, LoaderManifest manifest) {
            call(manager, "onMetadataUpdate", delta, image, manifest);
        }

        void maybeSend() {
            for (Method m : type.getDeclaredMethods()) {
                if (m.getName().endsWith("maybeSendControllerRegistration") && m.getParameterCount() == 0) {
                    call(manager, m.getName());
                    return;
                }
            }
            throw new HarnessError("no maybeSendControllerRegistration in " + type.getName());
        }

        void scheduleNextCommunication(long intervalMs) {
            call(manager, "scheduleNextCommunication", intervalMs);
        }

        void close() throws Exception {
            call(manager, "close");
        }

        boolean pendingRpc() {
            return (Boolean) get(manager, "pendingRpc");
        }

        void pendingRpc(boolean value) {
            set(manager, "pendingRpc", value);
        }

        long successfulRpcs() {
            return (Long) get(manager, "successfulRpcs");
        }

        void successfulRpcs(long value) {
            set(manager, "successfulRpcs", value);
        }

        long failedRpcs() {
            return (Long) get(manager, "failedRpcs");
        }

        void failedRpcs(long value) {
            set(manager, "failedRpcs", value);
        }

        boolean registeredInLog() {
            return (Boolean) get(manager, "registeredInLog");
        }

        void registeredInLog(boolean value) {
            set(manager, "registeredInLog", value);
        }

        boolean channelStarted() {
            return get(manager, "channelManager") != null;
        }

        void channel(Object channel) {
            set(manager, "channelManager", channel);
        }

        Uuid incarnationId() {
            return (Uuid) get(manager, "incarnationId");
        }

        /** The metadata.version the manager knows, or null for none yet (4.x {@code None}). */
        MetadataVersion metadataVersion() {
            return (MetadataVersion) unwrap(get(manager, "metadataVersion"));
        }

        void metadataVersion(MetadataVersion mv) {
            Field f = field(type, "metadataVersion");
            Object value = f.getType() == scala.Option.class ? scala.Option.apply(mv)
                : f.getType() == Optional.class ? Optional.of(mv) : mv;
            set(manager, "metadataVersion", value);
        }

        /** A new {@code RegistrationResponseHandler} of this manager (for a request the initial state has pending). */
        Object newResponseHandler() {
            Class<?> handler = anyClass(type.getName() + "$RegistrationResponseHandler");
            try {
                Constructor<?> c = handler.getDeclaredConstructors()[0];
                c.setAccessible(true);
                return c.newInstance(manager);
            } catch (ReflectiveOperationException e) {
                throw new HarnessError(String.valueOf(e));
            }
        }
    }

    /** An authorizer field of {@link Authorizer}'s type, for the compile-time reference. */
    static Class<Authorizer> authorizerType() {
        return Authorizer.class;
    }
}
