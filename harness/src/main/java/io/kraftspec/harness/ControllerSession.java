package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;


import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.memory.MemoryPool;
import org.apache.kafka.common.message.ControllerRegistrationRequestData;
import org.apache.kafka.common.message.ControllerRegistrationResponseData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.metadata.FeatureLevelRecord;
import org.apache.kafka.common.metadata.RegisterBrokerRecord;
import org.apache.kafka.common.metadata.RegisterControllerRecord;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ControllerRegistrationRequest;
import org.apache.kafka.common.requests.ControllerRegistrationResponse;
import org.apache.kafka.common.requests.DescribeClusterRequest;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.controller.ControllerRequestContext;
import org.apache.kafka.controller.KraftspecControllerControl;
import org.apache.kafka.controller.errors.ControllerExceptions;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;
import org.apache.kafka.image.loader.LogDeltaManifest;
import org.apache.kafka.metadata.ControllerRegistration;
import org.apache.kafka.metadata.ListenerInfo;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.queue.KafkaEventQueue;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.common.MetadataVersion;

import java.lang.reflect.Field;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import scala.Option;

/**
 * The kraftspec {@code controller} component (KIP-919 controller registration, DescribeCluster with KIP-1073's
 * fenced brokers) on Apache Kafka's own classes. What runs is Kafka's code; what the harness adds is glue, each
 * piece mirroring the Kafka method named:
 *
 * <ul>
 *   <li><b>The active controller</b>: Kafka's {@code ClusterControlManager} and {@code FeatureControlManager}
 *   ({@link KraftspecControllerControl}). {@code register_controller} goes through Kafka's
 *   {@code ControllerApis.handle} / {@code handleControllerRegistration} (CLUSTER_ACTION authorization, the
 *   response and error response) into a {@code Controller} whose {@code registerController} mirrors
 *   {@code QuorumController.registerController}'s write event: NOT_CONTROLLER
 *   ({@code ControllerExceptions.newWrongControllerException}) when inactive, else
 *   {@code ClusterControlManager.registerController} and the replay of its records at the log end
 *   ({@code QuorumController.replay}).</li>
 *   <li><b>The metadata image</b>: Kafka's {@code MetadataDelta} / {@code MetadataImage}; every record the log
 *   gains is replayed into a delta and applied, and the image published to Kafka's
 *   {@code ControllerRegistrationsPublisher} and {@code KRaftMetadataCache} (as {@code MetadataLoader} publishes).
 *   {@code on_metadata_update} builds the delta a loader would hand over: a {@code FeatureLevelRecord} for a new
 *   metadata.version, and this node's registration marked changed ({@code ClusterDelta.changedControllers}).</li>
 *   <li><b>The registration manager</b>: Kafka's {@code ControllerRegistrationManager} with its own
 *   {@code KafkaEventQueue}, under a {@link HarnessTime} the trace sets (the inputs {@code on_response} and
 *   {@code on_deadline} move it to their {@code now}; the queue fires a due deferred resend itself, before any
 *   queued event, as {@code KafkaEventQueue.EventHandler.handleEvents} does). After every input the harness waits
 *   until the queue has run everything enqueued. The channel ({@link HarnessChannel}) records the requests sent and
 *   completes them with the trace's {@code on_response} ({@code REQUEST_TIMED_OUT}: the channel's
 *   {@code onTimeout}). {@code maybe_send} runs Kafka's {@code maybeSendControllerRegistration} on the queue, as
 *   the deferred "communication" event does.</li>
 *   <li><b>DescribeCluster</b>: a serialized request ({@code AbstractRequest.serializeWithHeader}, so a request the
 *   client cannot write at its version is refused as the client refuses it) handed to Kafka's
 *   {@code KafkaApis.handleDescribeCluster} (a broker) or {@code ControllerApis.handle} (a controller), with an
 *   authorizer answering as the trace's {@code authorization} says.</li>
 * </ul>
 *
 * <p><b>Random choices.</b> Kafka draws from {@code ThreadLocalRandom}; JDK 17 cannot be seeded to an arbitrary
 * {@code nextDouble} (it mixes two 32-bit outputs), so the harness does not drive these draws but reads them and
 * reports them in {@code "choices"}: the backoff's draw (the random seed of the thread that will run Kafka's
 * {@code ExponentialBackoff.backoff} saved, the draw taken, the seed restored, so that Kafka takes the same draw)
 * and the "random" broker {@code KRaftMetadataCache.getRandomAliveBrokerId} picked, as it shows in the response
 * (the controller id: the broker if listed, else -1), stated as an index among the unfenced brokers in id order
 * that gives the same response. kraftspec.harness.controller writes them into the step as {@code jitter} and
 * {@code chooser}.
 *
 * <p><b>Versions.</b> One source for Kafka 3.9 to 4.4: the classes whose names, constructors or members changed
 * between them are reached through {@link ControllerKafka}.
 *
 * <p><b>Hash orders.</b> Kafka lists DescribeCluster's nodes as it iterates its image's registrations
 * ({@code ClusterImage}'s {@code HashMap}s, rebuilt by every {@code ClusterDelta.apply}); when that order is not id
 * order the harness reports it ({@code "order"}, the step's {@code order}). A registration's endpoints and
 * features are {@code HashMap}s too: the post-state states them in name order.
 *
 * <p><b>Vocabulary.</b> Incarnation ids are Kafka {@code Uuid}s; kraftspec.harness.controller maps the trace's
 * names onto them. A message that describes the request itself ({@code RequestChannel.Request.toString}: the
 * processor, connection id and session object of the harness's made-up connection) has that description
 * written {@value #REQUEST_PLACEHOLDER}. The manager's metadata.version "not known yet" ({@code None}) is
 * reported as 1, the reference's {@code MINIMUM_KRAFT_MV}. Broker registrations' log directories are not given
 * to Kafka (DescribeCluster never reads them).
 */
final class ControllerSession implements Session {
    private static final KafkaPrincipal PRINCIPAL = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, "kraftspec");
    private static final String COMMUNICATION = "communication"; // ControllerRegistrationManager's deferred event
    /** A message's description of the request itself (processor, connection id, session object): the harness's. */
    static final String REQUEST_PLACEHOLDER = "<request>";

    private static ControllerKafka.Shared shared;
    private static final Map<String, Object> BROKER_APIS = new HashMap<>();
    private static final Map<String, Object> CONTROLLER_APIS = new HashMap<>();
    private static ControllerSession live; // closed when the next controller session opens
    private static final AtomicLong CORRELATION = new AtomicLong();

    private final String clusterId;
    private final HarnessTime time = new HarnessTime();
    private long clock;
    private final KraftspecControllerControl control;
    private MetadataImage image = MetadataImage.EMPTY;
    private long nextOffset;
    private final int raftLeaderId;

    private final int nodeId;
    private final ListenerInfo listeners;
    private final Map<String, VersionRange> features;
    private ControllerKafka.Manager manager;
    private HarnessChannel channel;

    ControllerSession(JsonNode initial, JsonNode request) throws Exception {
        synchronized (ControllerSession.class) {
            if (live != null) live.close();
            live = this;
            if (shared == null) shared = new ControllerKafka.Shared();
        }
        clusterId = initial.path("cluster_id").asText();
        raftLeaderId = initial.path("raft_leader_id").asInt(-1);
        control = new KraftspecControllerControl(clusterId, time, ControllerKafka.newLogContext("[kraftspec controller] "));
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        List<ApiMessage> records = new ArrayList<>();
        if (!initial.path("metadata_version").isNull() && initial.has("metadata_version")) {
            records.add(new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
                .setFeatureLevel(metadataVersion(initial.get("metadata_version").asInt()).featureLevel()));
        }
        for (JsonNode broker : initial.path("brokers")) records.add(brokerRecord(broker));
        for (JsonNode controller : initial.path("controllers")) records.add(controllerRecord(controller));
        long offset = 0;
        for (ApiMessage record : records) {
            control.replay(record, offset++);
            delta.replay(record);
        }
        nextOffset = initial.path("next_offset").asLong(0);
        publish(delta);

        JsonNode m = initial.path("manager");
        nodeId = m.path("node_id").asInt();
        List<Endpoint> endpoints = new ArrayList<>();
        for (JsonNode l : m.path("listeners")) {
            endpoints.add(new Endpoint(l.path("name").asText(), securityProtocol(l.path("security_protocol").asInt(0)),
                l.path("host").asText(), l.path("port").asInt()));
        }
        listeners = ListenerInfo.create(endpoints);
        features = new LinkedHashMap<>();
        for (JsonNode f : m.path("features")) {
            features.put(f.path("name").asText(),
                VersionRange.of((short) f.path("min_supported").asInt(), (short) f.path("max_supported").asInt()));
        }
        newManager(Uuid.fromString(m.path("incarnation_id").asText()));
        restoreManager(m);
    }

    // ------------------------------------------------------------------------------------------------ the steps

    @Override
    public ObjectNode step(JsonNode input) throws Exception {
        String action = input.path("action").asText();
        ObjectNode answer = Main.JSON.createObjectNode();
        ObjectNode output = answer.putObject("output");
        ObjectNode choices = answer.putObject("choices");
        switch (action) {
            case "start":
                manager.start(channel.proxy);
                drain();
                sends(output);
                break;
            case "maybe_send":
                onQueue(() -> {
                    manager.maybeSend();
                    return null;
                });
                sends(output);
                break;
            case "on_metadata_update":
                onMetadataUpdate(input);
                sends(output);
                break;
            case "on_response":
                onResponse(input, choices);
                sends(output);
                break;
            case "on_deadline":
                clock = input.has("now") ? input.get("now").asLong() : clock;
                time.setMs(clock);
                drain();
                sends(output);
                break;
            case "restart":
                manager.close();
                newManager(Uuid.fromString(input.path("incarnation_id").asText()));
                sends(output);
                break;
            case "register_controller":
                registerController(input, output);
                break;
            case "replay_register_controller":
                append(List.of(new ApiMessageAndVersion(controllerRecord(input.path("record")), (short) 0)));
                output.putArray("records");
                break;
            case "describe_cluster":
                describeCluster(input, output, choices);
                break;
            case "check_request_serializable":
                checkRequestSerializable(input, output);
                break;
            case "advance_clock":
                // The trace's clock only: the manager's timer fires at on_deadline, the input naming that it fires.
                clock = input.path("now").asLong();
                break;
            default:
                throw new HarnessError("the controller harness has no action '" + action + "'");
        }
        if (choices.isEmpty()) answer.remove("choices");
        return answer;
    }

    /** A delta as the metadata loader would publish it to {@code ControllerRegistrationManager.onMetadataUpdate}. */
    private void onMetadataUpdate(JsonNode input) throws Exception {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(image).build();
        if (input.has("metadata_version") && !input.get("metadata_version").isNull()) {
            FeatureLevelRecord record = new FeatureLevelRecord().setName(MetadataVersion.FEATURE_NAME)
                .setFeatureLevel(metadataVersion(input.get("metadata_version").asInt()).featureLevel());
            delta.replay(record);
            control.replay(record, nextOffset); // the reference's image (the active controller's view) takes it too
        }
        if (input.path("registration_changed").asBoolean(false)) {
            ControllerRegistration current = image.cluster().controllers().get(nodeId);
            if (current != null) {
                delta.replay(asRecord(current)); // this node's registration, as the log holds it
            } else {
                delta.getOrCreateClusterDelta().changedControllers().put(nodeId, Optional.empty());
            }
        }
        MetadataImage newImage = publish(delta);
        manager.onMetadataUpdate(delta, newImage, manifest(newImage));
        drain();
    }

    private void onResponse(JsonNode input, ObjectNode choices) throws Exception {
        Object handler = channel.takePending();
        if (handler == null) throw new IllegalStateException("no ControllerRegistration request is pending");
        clock = input.has("now") ? input.get("now").asLong() : clock;
        Errors error = error(input.get("error"));
        time.setMs(clock);
        drain(); // a resend due by now fires first, as KafkaEventQueue runs due deferred events before queued ones
        if (error != Errors.NONE) {
            // the thread whose ThreadLocalRandom Kafka's ExponentialBackoff will draw from
            double draw = manager.respondsOnQueue ? onQueue(ControllerSession::peekNextDouble) : peekNextDouble();
            choices.put("jitter", draw);
        }
        if (error == Errors.REQUEST_TIMED_OUT) {
            ControllerKafka.call(handler, "onTimeout");
        } else {
            ControllerRegistrationResponse response = new ControllerRegistrationResponse(
                new ControllerRegistrationResponseData().setErrorCode(error.code())
                    .setErrorMessage(error == Errors.NONE ? null : error.message()));
            RequestHeader header = new RequestHeader(ApiKeys.CONTROLLER_REGISTRATION, (short) 0, "kraftspec",
                (int) CORRELATION.incrementAndGet());
            ControllerKafka.call(handler, "onComplete", new ClientResponse(header,
                (org.apache.kafka.clients.RequestCompletionHandler) null, "controller", clock, clock, false, null,
                null, response));
        }
        drain();
    }

    /** Kafka's {@code ControllerApis.handle} for a ControllerRegistration request (the quorum controller mirrored). */
    private void registerController(JsonNode input, ObjectNode output) throws Exception {
        boolean active = input.path("active").asBoolean(true);
        boolean authorized = input.path("authorized").asBoolean(true);
        List<ApiMessageAndVersion> written = new ArrayList<>();
        long firstOffset = nextOffset;
        shared.registrar = (context, data) -> {
            // QuorumController.registerController: appendWriteEvent("registerController", ...): an inactive
            // controller fails the event with NotControllerException; else the operation's records are replayed
            // at the log end, and an operation that throws fails the future with its exception.
            CompletableFuture<Void> future = new CompletableFuture<>();
            if (!active) {
                future.completeExceptionally(ControllerExceptions.newWrongControllerException(
                    raftLeaderId >= 0 && raftLeaderId != nodeId ? OptionalInt.of(raftLeaderId) : OptionalInt.empty()));
                return future;
            }
            try {
                List<ApiMessageAndVersion> records = control.registerController(data);
                append(records);
                written.addAll(records);
                future.complete(null);
            } catch (Throwable t) {
                future.completeExceptionally(t);
            }
            return future;
        };
        shared.authorizer.set(true, true, 0, authorized);
        ControllerRegistrationRequestData data = registrationRequest(input.path("request"));
        CapturingContext context = new CapturingContext();
        Object request = request(new ControllerRegistrationRequest.Builder(data).build((short) 0), "CONTROLLER",
            context);
        AbstractResponse response;
        try {
            ControllerKafka.call(controllerApis(), "handle", request, ControllerKafka.requestLocal());
            ControllerKafka.checkFaults();
            response = context.take();
        } finally {
            shared.registrar = null;
        }
        ControllerRegistrationResponseData r = ((ControllerRegistrationResponse) response).data();
        ObjectNode json = output.putObject("response");
        json.put("error", Errors.forCode(r.errorCode()).name());
        json.put("message", r.errorMessage());
        output.set("records", Records.toJson(firstOffset, written));
    }

    private void describeCluster(JsonNode input, ObjectNode output, ObjectNode choices) throws Exception {
        String receiver = input.path("receiver").asText("broker");
        if (!receiver.equals("broker") && !receiver.equals("controller")) {
            throw new HarnessError("unknown DescribeCluster receiver '" + receiver + "'");
        }
        boolean broker = receiver.equals("broker");
        String listener = input.has("listener") ? input.get("listener").asText() : broker ? "PLAINTEXT" : "CONTROLLER";
        JsonNode auth = input.path("authorization");
        shared.authorizer.set(auth.path("describe_cluster").asBoolean(true), auth.path("alter_cluster").asBoolean(true),
            auth.path("authorized_operations").asInt(0), true);
        JsonNode r = input.path("request");
        short version = (short) r.path("version").asInt();
        DescribeClusterRequestData data = describeRequest(r);
        CapturingContext context = new CapturingContext();
        Object request = request(new DescribeClusterRequest.Builder(data).build(version), listener, context);
        if (broker) {
            ControllerKafka.call(brokerApis(), "handleDescribeCluster", request);
        } else {
            shared.raftLeader = new LeaderAndEpoch(raftLeaderId >= 0 ? OptionalInt.of(raftLeaderId) : OptionalInt.empty(), 1);
            ControllerKafka.call(controllerApis(), "handle", request, ControllerKafka.requestLocal());
        }
        ControllerKafka.checkFaults();
        DescribeClusterResponseData d = ((DescribeClusterResponse) context.take()).data();
        String message = d.errorMessage();
        if (message != null) message = message.replace(request.toString(), REQUEST_PLACEHOLDER);
        // the chooser is read from the response (below); Kafka's own pick is not otherwise observable
        // The order Kafka iterated the registrations in (ClusterImage's HashMaps), when it is not id order.
        List<Integer> order = new ArrayList<>(broker ? image.cluster().brokers().keySet()
            : image.cluster().controllers().keySet());
        List<Integer> sorted = new ArrayList<>(order);
        sorted.sort(null);
        if (!order.equals(sorted)) order.forEach(choices.putArray("order")::add);
        if (broker && d.errorCode() == Errors.NONE.code()) {
            // Kafka's random choice (KRaftMetadataCache.getRandomAliveBrokerId) shows only as the response's
            // controller id: the broker it names if listed, else -1. Stated as the reference's chooser, an index
            // among the unfenced brokers in id order that gives the same response.
            List<Integer> unfenced = new ArrayList<>();
            image.cluster().brokers().forEach((id, b) -> {
                if (!b.fenced()) unfenced.add(id);
            });
            unfenced.sort(null);
            List<Integer> listed = new ArrayList<>();
            d.brokers().forEach(b -> listed.add(b.brokerId()));
            int chooser = d.controllerId() >= 0 ? unfenced.indexOf(d.controllerId())
                : firstNotIn(unfenced, listed);
            if (chooser >= 0) choices.put("chooser", chooser);
        }
        ObjectNode json = output.putObject("response");
        json.put("error", Errors.forCode(d.errorCode()).name());
        json.put("error_message", message);
        json.put("endpoint_type", d.endpointType());
        json.put("cluster_id", d.clusterId());
        json.put("controller_id", d.controllerId());
        ArrayNode nodes = json.putArray("nodes");
        for (DescribeClusterResponseData.DescribeClusterBroker b : d.brokers()) {
            ObjectNode node = nodes.addObject();
            node.put("node_id", b.brokerId());
            node.put("host", b.host());
            node.put("port", b.port());
            node.put("rack", b.rack());
            node.put("is_fenced", isFenced(b));
        }
        json.put("cluster_authorized_operations", d.clusterAuthorizedOperations());
        output.putArray("records");
    }

    /** The client's side: {@code DescribeClusterRequest.Builder.build(version)} and its serialization. */
    private void checkRequestSerializable(JsonNode input, ObjectNode output) {
        JsonNode r = input.path("request");
        short version = (short) r.path("version").asInt();
        ObjectNode json = output.putObject("response");
        try {
            DescribeClusterRequest request = new DescribeClusterRequest.Builder(describeRequest(r)).build(version);
            request.serializeWithHeader(new RequestHeader(ApiKeys.DESCRIBE_CLUSTER, version, "kraftspec", 0));
            json.put("serializable", true);
            json.putNull("message");
        } catch (UnsupportedVersionException e) {
            json.put("serializable", false);
            json.put("message", e.getMessage());
        }
        output.putArray("records");
    }

    // ------------------------------------------------------------------------------------------------ post-state

    @Override
    public ObjectNode post() throws Exception {
        ObjectNode post = Main.JSON.createObjectNode();
        post.put("clock", clock);
        post.put("next_offset", nextOffset);
        Optional<MetadataVersion> mv = control.metadataVersion();
        if (mv.isPresent()) post.put("metadata_version", mv.get().featureLevel());
        ObjectNode controllers = post.putObject("controllers");
        for (Map.Entry<Integer, ControllerRegistration> e : new TreeMap<>(control.controllerRegistrations()).entrySet()) {
            controllers.set(Integer.toString(e.getKey()), registration(e.getValue()));
        }
        ObjectNode m = onQueue(() -> {
            ObjectNode s = Main.JSON.createObjectNode();
            s.put("incarnation_id", manager.incarnationId().toString());
            MetadataVersion known = manager.metadataVersion();
            // The reference's ManagerState keeps 1 (MINIMUM_KRAFT_MV) for "not known yet" (Kafka 4.x: None).
            s.put("known_metadata_version", known != null ? known.featureLevel() : 1);
            s.put("registered", manager.registeredInLog());
            s.put("channel_started", manager.channelStarted());
            s.put("pending_rpcs", manager.pendingRpc() ? 1 : 0);
            s.put("successful_rpcs", manager.successfulRpcs());
            s.put("failed_rpcs", manager.failedRpcs());
            Long deadline = deferredDeadlineNs(manager.eventQueue(), COMMUNICATION);
            if (deadline == null) {
                s.putNull("resend_deadline_ms");
            } else {
                s.put("resend_deadline_ms", TimeUnit.NANOSECONDS.toMillis(deadline));
            }
            return s;
        });
        post.setAll(m);
        return post;
    }

    private static ObjectNode registration(ControllerRegistration registration) {
        ObjectNode json = Main.JSON.createObjectNode();
        json.put("controller_id", registration.id());
        json.put("incarnation_id", registration.incarnationId().toString());
        json.put("zk_migration_ready", registration.zkMigrationReady());
        ArrayNode listeners = json.putArray("listeners");
        // Kafka keeps both in HashMaps keyed by name: stated in name order, as the reference keeps them.
        for (Endpoint e : new TreeMap<>(registration.listeners()).values()) {
            ObjectNode l = listeners.addObject();
            l.put("name", endpointName(e));
            l.put("host", e.host());
            l.put("port", e.port());
            l.put("security_protocol", e.securityProtocol().id);
        }
        ArrayNode features = json.putArray("features");
        for (Map.Entry<String, VersionRange> f : new TreeMap<>(registration.supportedFeatures()).entrySet()) {
            ObjectNode feature = features.addObject();
            feature.put("name", f.getKey());
            feature.put("min_supported", f.getValue().min());
            feature.put("max_supported", f.getValue().max());
        }
        return json;
    }

    // ------------------------------------------------------------------------------------------------ the log and image

    /** Records written at the log end: replayed by the active controller and into the published image. */
    private void append(List<ApiMessageAndVersion> records) {
        MetadataDelta delta = new MetadataDelta.Builder().setImage(image).build();
        for (ApiMessageAndVersion record : records) {
            control.replay(record.message(), nextOffset++);
            delta.replay(record.message());
        }
        publish(delta);
    }

    /** The image after {@code delta}, published as {@code MetadataLoader} publishes a log delta. */
    private MetadataImage publish(MetadataDelta delta) {
        long last = Math.max(nextOffset - 1, 0);
        MetadataProvenance provenance = (MetadataProvenance) ControllerKafka.construct(MetadataProvenance.class,
            p -> p.getType() == long.class ? last : p.getType() == int.class ? 1 : p.getType() == boolean.class);
        MetadataImage newImage = delta.apply(provenance);
        image = newImage;
        shared.setImage(newImage);
        shared.publisher.onMetadataUpdate(delta, newImage, manifest(newImage));
        Object mv = ControllerKafka.unwrap(newImage.features().metadataVersion()); // an Optional from 4.0
        if (mv != null) shared.finalizedMetadataVersion = (MetadataVersion) mv;
        return newImage;
    }

    private static LogDeltaManifest manifest(MetadataImage image) {
        return LogDeltaManifest.newBuilder().provenance(image.provenance())
            .leaderAndEpoch(LeaderAndEpoch.UNKNOWN).numBatches(1).elapsedNs(1).numBytes(1).build();
    }

    // ------------------------------------------------------------------------------------------------ the manager

    private void newManager(Uuid incarnationId) throws Exception {
        manager = new ControllerKafka.Manager(nodeId, clusterId, time, features, incarnationId, listeners);
        channel = new HarnessChannel(manager);
        drain();
    }

    /** The explicit initial state's soft state, set on the manager's fields (its event thread, idle otherwise). */
    private void restoreManager(JsonNode m) throws Exception {
        if (m.path("pending_rpcs").asInt(0) > 1) {
            throw new HarnessError("Kafka's ControllerRegistrationManager has at most one pending RPC (pendingRpc is a "
                + "boolean); the initial state has " + m.path("pending_rpcs").asInt());
        }
        onQueue(() -> {
            if (m.has("metadata_version") && !m.get("metadata_version").isNull()
                    && m.get("metadata_version").asInt() != 1) {
                manager.metadataVersion(metadataVersion(m.get("metadata_version").asInt()));
            }
            manager.registeredInLog(m.path("registered").asBoolean(false));
            if (m.path("channel_started").asBoolean(false)) manager.channel(channel.proxy);
            if (m.path("pending_rpcs").asInt(0) == 1) {
                manager.pendingRpc(true);
                channel.pending.add(manager.newResponseHandler());
            }
            manager.successfulRpcs(m.path("successful_rpcs").asLong(0));
            manager.failedRpcs(m.path("failed_rpcs").asLong(0));
            if (m.has("resend_deadline_ms") && !m.get("resend_deadline_ms").isNull()) {
                long deadline = m.get("resend_deadline_ms").asLong();
                if (deadline <= clock) {
                    throw new HarnessError("a resend deadline at or before the clock (" + deadline + " <= " + clock
                        + ") has already fired in Kafka's event queue");
                }
                manager.scheduleNextCommunication(deadline - clock);
            }
            return null;
        });
    }

    /** The deadline of the deferred event tagged {@code tag} (KafkaEventQueue's internals), or null. */
    private static Long deferredDeadlineNs(KafkaEventQueue queue, String tag) throws Exception {
        Field handlerField = KafkaEventQueue.class.getDeclaredField("eventHandler");
        handlerField.setAccessible(true);
        Object handler = handlerField.get(queue);
        Field tags = handler.getClass().getDeclaredField("tagToEventContext");
        tags.setAccessible(true);
        Object context = ((Map<?, ?>) tags.get(handler)).get(tag);
        if (context == null) return null;
        Field deadline = context.getClass().getDeclaredField("deadlineNs");
        deadline.setAccessible(true);
        java.util.OptionalLong ns = (java.util.OptionalLong) deadline.get(context);
        return ns.isPresent() ? ns.getAsLong() : null;
    }

    /** Runs {@code body} on the manager's event thread after everything enqueued before it. */
    private <T> T onQueue(Callable<T> body) throws Exception {
        CompletableFuture<T> done = new CompletableFuture<>();
        manager.eventQueue().append(() -> {
            try {
                done.complete(body.call());
            } catch (Throwable t) {
                done.completeExceptionally(t);
            }
        });
        try {
            return done.get(60, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception) throw (Exception) e.getCause();
            throw e;
        }
    }

    private void drain() throws Exception {
        onQueue(() -> null);
    }

    /** The calling thread's next {@code ThreadLocalRandom.nextDouble()}, its random state left as it was. */
    private static double peekNextDouble() {
        ThreadLocalRandom random = ThreadLocalRandom.current(); // initializes this thread's seed first
        Thread thread = Thread.currentThread();
        long seed = Unsafe.getLong(thread);
        double draw = random.nextDouble();
        Unsafe.putLong(thread, seed);
        return draw;
    }

    /** {@code Thread.threadLocalRandomSeed} through {@code sun.misc.Unsafe} (jdk.unsupported). */
    private static final class Unsafe {
        private static final sun.misc.Unsafe UNSAFE;
        private static final long SEED;

        static {
            try {
                Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                UNSAFE = (sun.misc.Unsafe) f.get(null);
                SEED = UNSAFE.objectFieldOffset(Thread.class.getDeclaredField("threadLocalRandomSeed"));
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        static long getLong(Thread thread) {
            return UNSAFE.getLong(thread, SEED);
        }

        static void putLong(Thread thread, long seed) {
            UNSAFE.putLong(thread, SEED, seed);
        }
    }

    private void sends(ObjectNode output) {
        ArrayNode sends = output.putObject("response").putArray("sends");
        for (ControllerRegistrationRequestData data : channel.takeSent()) {
            ObjectNode s = sends.addObject();
            s.put("controller_id", data.controllerId());
            s.put("incarnation_id", data.incarnationId().toString());
            s.put("zk_migration_ready", data.zkMigrationReady());
            ArrayNode ls = s.putArray("listeners");
            for (ControllerRegistrationRequestData.Listener l : data.listeners()) {
                ObjectNode json = ls.addObject();
                json.put("name", l.name());
                json.put("host", l.host());
                json.put("port", l.port());
                json.put("security_protocol", l.securityProtocol());
            }
            ArrayNode fs = s.putArray("features");
            for (ControllerRegistrationRequestData.Feature f : data.features()) {
                ObjectNode json = fs.addObject();
                json.put("name", f.name());
                json.put("min_supported", f.minSupportedVersion());
                json.put("max_supported", f.maxSupportedVersion());
            }
        }
        output.putArray("records");
    }

    /** The manager's event thread stops with the session (the server closes a session it replaces). */
    @Override
    public void close() {
        synchronized (ControllerSession.class) {
            if (live == this) live = null;
        }
        try {
            if (manager != null) manager.close();
        } catch (Exception e) {
            // the process is gone either way
        }
        manager = null;
    }

    // ------------------------------------------------------------------------------------------------ requests

    private Object brokerApis() {
        return BROKER_APIS.computeIfAbsent(clusterId, shared::brokerApis);
    }

    private Object controllerApis() {
        return CONTROLLER_APIS.computeIfAbsent(clusterId, shared::controllerApis);
    }

    /** A request as a network thread hands it to the request handler: serialized, its header parsed. */
    private Object request(AbstractRequest body, String listener, CapturingContext context) {
        RequestHeader header = new RequestHeader(body.apiKey(), body.version(), "kraftspec",
            (int) CORRELATION.incrementAndGet());
        ByteBuffer buffer = body.serializeWithHeader(header);
        context.header = RequestHeader.parse(buffer);
        context.listener = new ListenerName(listener);
        RequestContext built = context.build();
        return ControllerKafka.construct(ControllerKafka.anyClass("kafka.network.RequestChannel$Request",
            "org.apache.kafka.network.Request"), p ->
            p.getType() == int.class ? 0 : p.getType() == RequestContext.class ? built
                : p.getType() == long.class ? 0L : p.getType() == MemoryPool.class ? MemoryPool.NONE
                : p.getType() == ByteBuffer.class ? buffer : p.getType().isInstance(shared.requestMetrics)
                ? shared.requestMetrics : ControllerKafka.empty(p));
    }

    private static DescribeClusterRequestData describeRequest(JsonNode r) {
        DescribeClusterRequestData data = new DescribeClusterRequestData()
            .setIncludeClusterAuthorizedOperations(r.path("include_cluster_authorized_operations").asBoolean(false))
            .setEndpointType((byte) r.path("endpoint_type").asInt(1));
        boolean includeFenced = r.path("include_fenced_brokers").asBoolean(false);
        try {
            DescribeClusterRequestData.class.getMethod("setIncludeFencedBrokers", boolean.class).invoke(data, includeFenced);
        } catch (NoSuchMethodException e) {
            // Kafka 3.9 (DescribeCluster v0-v1) has no IncludeFencedBrokers (KIP-1073, 4.0)
            if (includeFenced) throw new HarnessError("this Kafka's DescribeCluster request has no IncludeFencedBrokers");
        } catch (ReflectiveOperationException e) {
            throw new HarnessError(String.valueOf(e));
        }
        return data;
    }

    /** An endpoint's listener name ({@code Endpoint.listener()} from 4.1; {@code listenerName()}, an Optional,
     * before). */
    private static String endpointName(Endpoint endpoint) {
        for (String name : new String[] {"listener", "listenerName"}) {
            try {
                return (String) ControllerKafka.unwrap(Endpoint.class.getMethod(name).invoke(endpoint));
            } catch (NoSuchMethodException e) {
                // the other name
            } catch (ReflectiveOperationException e) {
                throw new HarnessError(String.valueOf(e));
            }
        }
        throw new HarnessError("Endpoint has no listener name accessor");
    }

    private static ControllerRegistrationRequestData registrationRequest(JsonNode r) {
        ControllerRegistrationRequestData data = new ControllerRegistrationRequestData()
            .setControllerId(r.path("controller_id").asInt())
            .setIncarnationId(Uuid.fromString(r.path("incarnation_id").asText()))
            .setZkMigrationReady(r.path("zk_migration_ready").asBoolean(false));
        for (JsonNode l : r.path("listeners")) {
            data.listeners().add(new ControllerRegistrationRequestData.Listener().setName(l.path("name").asText())
                .setHost(l.path("host").asText()).setPort(l.path("port").asInt())
                .setSecurityProtocol((short) l.path("security_protocol").asInt(0)));
        }
        for (JsonNode f : r.path("features")) {
            data.features().add(new ControllerRegistrationRequestData.Feature().setName(f.path("name").asText())
                .setMinSupportedVersion((short) f.path("min_supported").asInt())
                .setMaxSupportedVersion((short) f.path("max_supported").asInt()));
        }
        return data;
    }

    private static RegisterControllerRecord controllerRecord(JsonNode c) {
        RegisterControllerRecord record = new RegisterControllerRecord()
            .setControllerId(c.path("controller_id").asInt())
            .setIncarnationId(Uuid.fromString(c.path("incarnation_id").asText()))
            .setZkMigrationReady(c.path("zk_migration_ready").asBoolean(false));
        for (JsonNode l : c.has("end_points") ? c.path("end_points") : c.path("listeners")) {
            record.endPoints().add(new RegisterControllerRecord.ControllerEndpoint().setName(l.path("name").asText())
                .setHost(l.path("host").asText()).setPort(l.path("port").asInt())
                .setSecurityProtocol((short) l.path("security_protocol").asInt(0)));
        }
        for (JsonNode f : c.path("features")) {
            record.features().add(new RegisterControllerRecord.ControllerFeature().setName(f.path("name").asText())
                .setMinSupportedVersion((short) f.path("min_supported").asInt())
                .setMaxSupportedVersion((short) f.path("max_supported").asInt()));
        }
        return record;
    }

    /** A registration as its RegisterControllerRecord (``ControllerRegistration.toRecord`` without its MV check). */
    private static RegisterControllerRecord asRecord(ControllerRegistration registration) {
        RegisterControllerRecord record = new RegisterControllerRecord().setControllerId(registration.id())
            .setIncarnationId(registration.incarnationId()).setZkMigrationReady(registration.zkMigrationReady());
        for (Endpoint e : registration.listeners().values()) {
            record.endPoints().add(new RegisterControllerRecord.ControllerEndpoint().setName(endpointName(e))
                .setHost(e.host()).setPort(e.port()).setSecurityProtocol(e.securityProtocol().id));
        }
        registration.supportedFeatures().forEach((name, range) -> record.features().add(
            new RegisterControllerRecord.ControllerFeature().setName(name)
                .setMinSupportedVersion(range.min()).setMaxSupportedVersion(range.max())));
        return record;
    }

    private static RegisterBrokerRecord brokerRecord(JsonNode b) {
        RegisterBrokerRecord record = new RegisterBrokerRecord()
            .setBrokerId(b.path("broker_id").asInt())
            .setBrokerEpoch(b.path("epoch").asLong())
            .setIncarnationId(Uuid.fromString(b.path("incarnation_id").asText()))
            .setFenced(b.path("fenced").asBoolean(true))
            .setInControlledShutdown(b.path("in_controlled_shutdown").asBoolean(false))
            .setRack(b.path("rack").isTextual() ? b.path("rack").asText() : null);
        for (JsonNode l : b.path("listeners")) {
            record.endPoints().add(new RegisterBrokerRecord.BrokerEndpoint().setName(l.path("name").asText())
                .setHost(l.path("host").asText()).setPort(l.path("port").asInt())
                .setSecurityProtocol((short) l.path("security_protocol").asInt(0)));
        }
        for (JsonNode f : b.path("features")) {
            record.features().add(new RegisterBrokerRecord.BrokerFeature().setName(f.path("name").asText())
                .setMinSupportedVersion((short) f.path("min_supported").asInt())
                .setMaxSupportedVersion((short) f.path("max_supported").asInt()));
        }
        return record;
    }

    private static MetadataVersion metadataVersion(int level) {
        try {
            return MetadataVersion.fromFeatureLevel((short) level);
        } catch (IllegalArgumentException e) {
            throw new HarnessError("this Kafka has no metadata.version with feature level " + level);
        }
    }

    private static SecurityProtocol securityProtocol(int id) {
        SecurityProtocol protocol = SecurityProtocol.forId((short) id);
        if (protocol == null) throw new HarnessError("no security protocol with id " + id);
        return protocol;
    }

    private static Errors error(JsonNode node) {
        if (node == null || node.isNull()) return Errors.NONE;
        if (node.isNumber()) return Errors.forCode((short) node.asInt());
        try {
            return Errors.valueOf(node.asText());
        } catch (IllegalArgumentException e) {
            throw new HarnessError("Kafka has no error named " + node.asText());
        }
    }

    // ------------------------------------------------------------------------------------------------ collaborators

    /** A settable clock ({@code Time}) for the manager and its event queue, in the trace's milliseconds. */
    static final class HarnessTime implements Time {
        private volatile long nanos;

        void setMs(long ms) {
            nanos = TimeUnit.MILLISECONDS.toNanos(ms);
        }

        @Override
        public long milliseconds() {
            return TimeUnit.NANOSECONDS.toMillis(nanos);
        }

        @Override
        public long nanoseconds() {
            return nanos;
        }

        @Override
        public void sleep(long ms) {
            nanos += TimeUnit.MILLISECONDS.toNanos(ms);
        }

        @Override
        public void waitObject(Object obj, java.util.function.Supplier<Boolean> condition, long deadlineMs)
                throws InterruptedException {
            throw ControllerKafka.fault(new UnsupportedOperationException("waitObject in the controller harness"));
        }
    }

    /**
     * The manager's channel ({@code NodeToControllerChannelManager}, a proxy of Kafka's interface): records each
     * request sent and its completion handler (Kafka's {@code RegistrationResponseHandler}).
     */
    static final class HarnessChannel {
        final List<ControllerRegistrationRequestData> sent = new ArrayList<>();
        final List<Object> pending = new ArrayList<>();
        final Object proxy;

        HarnessChannel(ControllerKafka.Manager manager) {
            proxy = manager.channel(Map.of(
                "sendRequest", args -> {
                    send((AbstractRequest.Builder<?>) args[0], args[1]);
                    return null;
                },
                "start", args -> null,
                "shutdown", args -> null,
                "getTimeoutMs", args -> 30000L));
        }

        private synchronized void send(AbstractRequest.Builder<?> request, Object callback) {
            sent.add(((ControllerRegistrationRequest) request.build((short) 0)).data());
            pending.add(callback);
        }

        synchronized List<ControllerRegistrationRequestData> takeSent() {
            List<ControllerRegistrationRequestData> taken = new ArrayList<>(sent);
            sent.clear();
            return taken;
        }

        synchronized Object takePending() {
            return pending.isEmpty() ? null : pending.remove(0);
        }
    }

    /** The quorum controller's answer to a ControllerRegistration request (see {@link #registerController}). */
    @FunctionalInterface
    interface Registrar {
        CompletableFuture<Void> register(ControllerRequestContext context, ControllerRegistrationRequestData data);
    }

    /**
     * An authorizer answering as the trace's {@code authorization} says: DESCRIBE on CLUSTER asked alone
     * ({@code AuthHelper.authorize}) is {@code describe_cluster}, ALTER alone {@code alter_cluster}, CLUSTER_ACTION
     * alone {@code cluster_action}; the batch {@code AuthHelper.authorizedOperations} asks (every operation the
     * CLUSTER resource supports, none logged) is answered bit by bit from {@code authorized_operations}.
     */
    static final class HarnessAuthorizer implements Authorizer {
        private volatile boolean describe = true;
        private volatile boolean alter = true;
        private volatile boolean clusterAction = true;
        private volatile int operations;

        void set(boolean describe, boolean alter, int operations, boolean clusterAction) {
            this.describe = describe;
            this.alter = alter;
            this.operations = operations;
            this.clusterAction = clusterAction;
        }

        @Override
        public List<AuthorizationResult> authorize(AuthorizableRequestContext context, List<Action> actions) {
            List<AuthorizationResult> results = new ArrayList<>();
            boolean batch = actions.size() > 1 || (!actions.isEmpty() && !actions.get(0).logIfAllowed());
            for (Action action : actions) {
                boolean allowed;
                AclOperation op = action.operation();
                if (batch) {
                    allowed = (operations & (1 << op.code())) != 0;
                } else if (op == AclOperation.DESCRIBE) {
                    allowed = describe;
                } else if (op == AclOperation.ALTER) {
                    allowed = alter;
                } else if (op == AclOperation.CLUSTER_ACTION) {
                    allowed = clusterAction;
                } else {
                    throw ControllerKafka.fault(new UnsupportedOperationException("the controller harness is not asked " + op));
                }
                results.add(allowed ? AuthorizationResult.ALLOWED : AuthorizationResult.DENIED);
            }
            return results;
        }

        @Override
        public Map<org.apache.kafka.common.Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo info) {
            return Map.of();
        }

        @Override
        public List<? extends CompletionStage<AclCreateResult>> createAcls(AuthorizableRequestContext context,
                                                                          List<AclBinding> aclBindings) {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(AuthorizableRequestContext context,
                                                                          List<AclBindingFilter> filters) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Iterable<AclBinding> acls(AclBindingFilter filter) {
            return List.of();
        }

        @Override
        public void close() {
        }

        @Override
        public void configure(Map<String, ?> configs) {
        }
    }

    /**
     * The request's context ({@code RequestContext}): {@code RequestChannel.sendResponse} serializes a handler's
     * response through {@code buildResponseSend}, where the harness keeps it (no network thread takes it).
     */
    static final class CapturingContext {
        RequestHeader header;
        ListenerName listener;
        private AbstractResponse response;

        RequestContext build() {
            return new RequestContext(header, "kraftspec-connection", InetAddress.getLoopbackAddress(), PRINCIPAL,
                    listener, SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false) {
                @Override
                public Send buildResponseSend(AbstractResponse body) {
                    response = body;
                    return super.buildResponseSend(body);
                }
            };
        }

        AbstractResponse take() {
            AbstractResponse taken = response;
            response = null;
            if (taken == null) throw new HarnessError("Kafka's handler sent no response the harness could see");
            return taken;
        }
    }

    private static int firstNotIn(List<Integer> ids, List<Integer> listed) {
        for (int i = 0; i < ids.size(); i++) {
            if (!listed.contains(ids.get(i))) return i;
        }
        return 0;
    }

    /** {@code DescribeClusterBroker.isFenced} (KIP-1073, 4.0+); false in 3.9, which has no such field. */
    private static boolean isFenced(DescribeClusterResponseData.DescribeClusterBroker broker) {
        try {
            return (Boolean) broker.getClass().getMethod("isFenced").invoke(broker);
        } catch (NoSuchMethodException e) {
            return false;
        } catch (ReflectiveOperationException e) {
            throw new HarnessError(String.valueOf(e));
        }
    }
}
