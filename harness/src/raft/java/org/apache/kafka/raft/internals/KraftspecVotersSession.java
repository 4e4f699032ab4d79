package org.apache.kafka.raft.internals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import io.kraftspec.harness.HarnessError;
import io.kraftspec.harness.Session;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.feature.SupportedVersionRange;
import org.apache.kafka.common.message.VotersRecord;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.raft.Endpoints;
import org.apache.kafka.raft.ReplicaKey;
import org.apache.kafka.raft.VoterSet;
import org.apache.kafka.server.common.KRaftVersion;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The {@code voters} component: Apache Kafka's own {@link VoterSet} and {@link VoterSetHistory} (KIP-853, rules
 * §3.14), driven one operation at a time so that the reference's {@code raft_voters} and {@code raft_voter_history}
 * can be compared with them (tests/test_kafka_voters.py). It lives in Kafka's {@code internals} package because
 * {@code VoterSetHistory}'s constructor is package-private.
 *
 * <p>A voter set travels as a list of voters {@code {"id", "directory_id" (base64 or null), "listeners": {name:
 * [host, port]}, "supported": [min, max]}}, ordered by id; a replica key as {@code {"id", "directory_id"}}. The
 * initial state holds the history's static voters ({@code "static"}). Inputs:
 * <ul>
 *   <li>{@code {"action": "voter_set", "op": OP, "voters": V, ...}}: one {@code VoterSet} method on {@code V}
 *   ({@code add_voter}, {@code update_voter}, {@code update_voter_ignoring_directory_id},
 *   {@code voter_node_needs_update} with {@code "node"}; {@code remove_voter}, {@code is_voter},
 *   {@code is_only_voter} with {@code "key"}; {@code has_overlapping_majority} with {@code "other"};
 *   {@code supports_version} with {@code "version"}; {@code voter_ids}; {@code from_voters_record}, which converts
 *   {@code V} to a {@code VotersRecord} entry by entry, repeated ids included, and back); answers
 *   {@code {"result": R}} (a voter set, null for {@code Optional.empty()}, a boolean or a list);</li>
 *   <li>{@code {"action": "history", "op": OP, ...}}: one {@code VoterSetHistory} method on the session's history
 *   ({@code add_at} with {@code "offset"} and {@code "voters"}, {@code value_at_or_before} with {@code "offset"},
 *   {@code last_value}, {@code last_voter_set_offset}, {@code truncate_new_entries} and
 *   {@code truncate_old_entries} with {@code "offset"}, {@code clear}); an {@code IllegalArgumentException} is Kafka
 *   refusing the input.</li>
 * </ul>
 * The post-state is the history's last value.
 */
public final class KraftspecVotersSession implements Session {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final VoterSetHistory history;

    public KraftspecVotersSession(JsonNode initial, JsonNode request) {
        history = new VoterSetHistory(voterSet(initial.path("static")), new LogContext("[kraftspec voters] "));
    }

    @Override
    public ObjectNode step(JsonNode input) {
        ObjectNode answer = JSON.createObjectNode();
        ObjectNode output = answer.putObject("output");
        String action = input.path("action").asText();
        String op = input.path("op").asText();
        if (action.equals("voter_set")) {
            output.set("result", voterSetOp(op, input));
        } else if (action.equals("history")) {
            output.set("result", historyOp(op, input));
        } else {
            throw new HarnessError("the voters session has no action '" + action + "'");
        }
        return answer;
    }

    @Override
    public ObjectNode post() {
        ObjectNode post = JSON.createObjectNode();
        post.set("last_value", toJson(history.lastValue()));
        return post;
    }

    private JsonNode voterSetOp(String op, JsonNode input) {
        if (op.equals("from_voters_record")) {
            return toJson(VoterSet.fromVotersRecord(votersRecord(input.path("voters"))));
        }
        VoterSet voters = voterSet(input.path("voters"));
        switch (op) {
            case "add_voter": return toJson(voters.addVoter(voterNode(input.path("node"))));
            case "update_voter": return toJson(voters.updateVoter(voterNode(input.path("node"))));
            case "update_voter_ignoring_directory_id":
                return toJson(voters.updateVoterIgnoringDirectoryId(voterNode(input.path("node"))));
            case "voter_node_needs_update":
                return JSON.getNodeFactory().booleanNode(voters.voterNodeNeedsUpdate(voterNode(input.path("node"))));
            case "remove_voter": return toJson(voters.removeVoter(replicaKey(input.path("key"))));
            case "is_voter": return JSON.getNodeFactory().booleanNode(voters.isVoter(replicaKey(input.path("key"))));
            case "is_only_voter":
                return JSON.getNodeFactory().booleanNode(voters.isOnlyVoter(replicaKey(input.path("key"))));
            case "has_overlapping_majority":
                return JSON.getNodeFactory().booleanNode(voters.hasOverlappingMajority(voterSet(input.path("other"))));
            case "supports_version":
                return JSON.getNodeFactory().booleanNode(
                    voters.supportsVersion(KRaftVersion.fromFeatureLevel((short) input.path("version").asInt())));
            case "voter_ids": {
                ArrayNode ids = JSON.createArrayNode();
                voters.voterIds().stream().sorted().forEach(ids::add);
                return ids;
            }
            default: throw new HarnessError("the voters session has no voter_set op '" + op + "'");
        }
    }

    private JsonNode historyOp(String op, JsonNode input) {
        long offset = input.path("offset").asLong();
        switch (op) {
            case "add_at":
                history.addAt(offset, voterSet(input.path("voters")));
                return JSON.nullNode();
            case "value_at_or_before": return toJson(history.valueAtOrBefore(offset));
            case "last_value": return toJson(history.lastValue());
            case "last_voter_set_offset": {
                OptionalLong last = history.lastVoterSetOffset();
                return last.isPresent() ? JSON.getNodeFactory().numberNode(last.getAsLong()) : JSON.nullNode();
            }
            case "truncate_new_entries":
                history.truncateNewEntries(offset);
                return JSON.nullNode();
            case "truncate_old_entries":
                history.truncateOldEntries(offset);
                return JSON.nullNode();
            case "clear":
                history.clear();
                return JSON.nullNode();
            default: throw new HarnessError("the voters session has no history op '" + op + "'");
        }
    }

    private static ReplicaKey replicaKey(JsonNode key) {
        JsonNode directory = key.path("directory_id");
        Uuid directoryId = directory.isNull() || directory.isMissingNode()
            ? ReplicaKey.NO_DIRECTORY_ID : Uuid.fromString(directory.asText());
        return ReplicaKey.of(key.path("id").asInt(), directoryId);
    }

    private static VoterSet.VoterNode voterNode(JsonNode node) {
        Map<ListenerName, InetSocketAddress> listeners = new HashMap<>();
        node.path("listeners").fields().forEachRemaining(e -> listeners.put(ListenerName.normalised(e.getKey()),
            InetSocketAddress.createUnresolved(e.getValue().get(0).asText(), e.getValue().get(1).asInt())));
        JsonNode supported = node.path("supported");
        return VoterSet.VoterNode.of(replicaKey(node), Endpoints.fromInetSocketAddresses(listeners),
            new SupportedVersionRange((short) supported.get(0).asInt(), (short) supported.get(1).asInt()));
    }

    private static VoterSet voterSet(JsonNode voters) {
        Map<Integer, VoterSet.VoterNode> nodes = new HashMap<>();
        for (JsonNode node : voters) {
            if (nodes.put(node.path("id").asInt(), voterNode(node)) != null) {
                throw new HarnessError("a voter set with voter id " + node.path("id").asInt() + " twice");
            }
        }
        return VoterSet.fromMap(nodes);
    }

    /** A {@code VotersRecord} with one entry per listed voter, in the listed order (repeated ids kept). */
    private static VotersRecord votersRecord(JsonNode voters) {
        List<VotersRecord.Voter> entries = new ArrayList<>();
        for (JsonNode node : voters) {
            VoterSet.VoterNode voter = voterNode(node);
            VotersRecord one = VoterSet.fromMap(Map.of(voter.voterKey().id(), voter)).toVotersRecord((short) 0);
            entries.add(one.voters().get(0).duplicate());
        }
        return new VotersRecord().setVersion((short) 0).setVoters(entries);
    }

    private static JsonNode toJson(Optional<VoterSet> voters) {
        return voters.map(KraftspecVotersSession::toJson).orElse(JSON.nullNode());
    }

    private static JsonNode toJson(VoterSet voters) {
        ArrayNode list = JSON.createArrayNode();
        List<VotersRecord.Voter> entries = new ArrayList<>(voters.toVotersRecord((short) 0).voters());
        entries.sort((a, b) -> Integer.compare(a.voterId(), b.voterId()));
        for (VotersRecord.Voter voter : entries) {
            ObjectNode node = list.addObject();
            node.put("id", voter.voterId());
            Uuid directory = voter.voterDirectoryId();
            if (directory.equals(Uuid.ZERO_UUID)) node.putNull("directory_id");
            else node.put("directory_id", directory.toString());
            ObjectNode listeners = node.putObject("listeners");
            Iterator<VotersRecord.Endpoint> endpoints = voter.endpoints().iterator();
            while (endpoints.hasNext()) {
                VotersRecord.Endpoint endpoint = endpoints.next();
                ArrayNode address = listeners.putArray(endpoint.name());
                address.add(endpoint.host());
                address.add(endpoint.port());
            }
            ArrayNode supported = node.putArray("supported");
            supported.add(voter.kRaftVersionFeature().minSupportedVersion());
            supported.add(voter.kRaftVersionFeature().maxSupportedVersion());
        }
        return list;
    }
}
