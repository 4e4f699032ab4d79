package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * The {@code raft} component on Kafka 3.9: not served. The reference follows Kafka 4.x's client (KIP-996 pre-vote,
 * Resigned, bootstrap fetching), whose constructor and states 3.9 does not have.
 */
final class RaftComponent {
    private RaftComponent() {
    }

    static Session open(JsonNode initial, JsonNode request) {
        throw new HarnessError("raft: the harness drives Kafka 4.x's KafkaRaftClient only (3.9 has no pre-vote)");
    }
}
