package io.kraftspec.harness;

/** A trace input the harness cannot express to Kafka (a harness limit, never Kafka refusing the input). */
public final class HarnessError extends RuntimeException {
    public HarnessError(String message) {
        super(message);
    }
}
