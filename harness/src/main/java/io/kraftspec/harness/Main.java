package io.kraftspec.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * The harness server: one JSON request per line on standard input, one JSON answer per line on standard output.
 *
 * <ul>
 *   <li>{@code {"op": "hello"}}: the Kafka version on the class path and the components served.</li>
 *   <li>{@code {"op": "open", "component": C, "initial": I, ...}}: a new session of component C (the previous one
 *   is dropped).</li>
 *   <li>{@code {"op": "step", "input": X}}: X applied; answers {@code {"output": ..., "post": ...}}, or
 *   {@code {"refused": {"exception": CLASS, "message": M}}} when Kafka's code threw.</li>
 *   <li>{@code {"op": "run", "component": C, "initial": I, "inputs": [X...]}}: a whole trace in one round trip;
 *   answers {@code {"steps": [ANSWER...]}}, stopping after the first refusal.</li>
 * </ul>
 * A request the harness cannot serve answers {@code {"error": M}}. Kafka's own printing goes to standard error.
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    private final Map<String, SessionFactory> components;
    private Session session;

    Main(Map<String, SessionFactory> components) {
        this.components = components;
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // nothing but answers on the protocol's stream
        Main server = new Main(Components.all());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode answer;
            try {
                answer = server.handle(JSON.readTree(line));
            } catch (Exception | AssertionError e) {
                ObjectNode error = JSON.createObjectNode();
                error.put("error", describe(e));
                answer = error;
            }
            out.println(JSON.writeValueAsString(answer));
            out.flush();
        }
    }

    JsonNode handle(JsonNode request) throws Exception {
        String op = request.path("op").asText();
        switch (op) {
            case "hello": {
                ObjectNode hello = JSON.createObjectNode();
                hello.put("kafka_version", kafkaVersion());
                ArrayNode names = hello.putArray("components");
                new TreeMap<>(components).keySet().forEach(names::add);
                return hello;
            }
            case "open": {
                if (session != null) session.close();
                session = null;
                session = open(request);
                ObjectNode ok = JSON.createObjectNode();
                ok.put("ok", true);
                return ok;
            }
            case "step":
                if (session == null) throw new IllegalStateException("step before open");
                return step(session, request.get("input"));
            case "run": {
                Session s = open(request);
                try {
                    ObjectNode answer = JSON.createObjectNode();
                    ArrayNode steps = answer.putArray("steps");
                    for (JsonNode input : request.path("inputs")) {
                        ObjectNode one = step(s, input);
                        steps.add(one);
                        if (one.has("refused")) break;
                    }
                    return answer;
                } finally {
                    s.close();
                }
            }
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }

    private Session open(JsonNode request) throws Exception {
        String component = request.path("component").asText();
        SessionFactory factory = components.get(component);
        if (factory == null) {
            throw new HarnessError("the harness for Kafka " + kafkaVersion() + " has no component '"
                + component + "' (it has " + new TreeMap<>(components).keySet() + ")");
        }
        return factory.open(request.path("initial"), request);
    }

    private static ObjectNode step(Session s, JsonNode input) throws Exception {
        ObjectNode answer;
        try {
            answer = s.step(input);
        } catch (HarnessError e) {
            throw e;
        } catch (Exception | AssertionError e) {
            answer = JSON.createObjectNode();
            ObjectNode refused = answer.putObject("refused");
            refused.put("exception", e.getClass().getName());
            refused.put("message", String.valueOf(e.getMessage()));
            return answer;
        }
        answer.set("post", s.post());
        return answer;
    }

    /** The version of the kafka-clients jar on the class path, from the properties file every release carries. */
    static String kafkaVersion() throws java.io.IOException {
        java.util.Properties properties = new java.util.Properties();
        try (java.io.InputStream in = Main.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) properties.load(in);
        }
        return properties.getProperty("version", "unknown");
    }

    static String describe(Throwable e) {
        StringWriter trace = new StringWriter();
        e.printStackTrace(new PrintWriter(trace));
        String text = trace.toString();
        return text.length() > 4000 ? text.substring(0, 4000) : text;
    }
}
