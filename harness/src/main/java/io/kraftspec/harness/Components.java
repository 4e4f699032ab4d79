package io.kraftspec.harness;

import java.util.HashMap;
import java.util.Map;

/** The components this harness serves, by trace component name. */
final class Components {
    private Components() {
    }

    static Map<String, SessionFactory> all() {
        Map<String, SessionFactory> all = new HashMap<>();
        all.put("echo", EchoSession::new);
        all.put("broker", org.apache.kafka.controller.KraftspecBrokerSession::new);
        all.put("partition", org.apache.kafka.controller.PartitionSession::new);
        all.put("raft", RaftComponent::open);
        all.put("controller", ControllerSession::new);
        return all;
    }
}
