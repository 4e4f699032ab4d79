package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/** The protocol's own test component: answers each input with itself; {@code "fail"} throws as Kafka would. */
final class EchoSession implements Session {
    private int steps;

    EchoSession(JsonNode initial, JsonNode request) {
    }

    @Override
    public ObjectNode step(JsonNode input) {
        if (input.path("action").asText().equals("fail")) throw new IllegalStateException("asked to fail");
        if (input.path("action").asText().equals("unsupported")) throw new HarnessError("not expressible");
        steps++;
        ObjectNode answer = Main.JSON.createObjectNode();
        answer.putObject("output").set("response", input);
        return answer;
    }

    @Override
    public ObjectNode post() {
        ObjectNode post = Main.JSON.createObjectNode();
        post.put("steps", steps);
        return post;
    }
}
