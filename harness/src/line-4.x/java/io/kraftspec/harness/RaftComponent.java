package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;

/** The {@code raft} component on Kafka 4.x: {@link org.apache.kafka.raft.KraftspecRaftSession}. */
final class RaftComponent {
    private RaftComponent() {
    }

    static Session open(JsonNode initial, JsonNode request) throws Exception {
        return new org.apache.kafka.raft.KraftspecRaftSession(initial, request);
    }
}
