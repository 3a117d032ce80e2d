package asyncbroker.harness;

import com.fasterxml.jackson.databind.JsonNode;

/** A command's arguments: the bootstrap address and the names the Python side chose. */
final class Args {
    private final JsonNode node;

    Args(JsonNode node) {
        this.node = node;
    }

    String bootstrap() {
        return str("bootstrap");
    }

    /** A name unique to this run (topics, groups): scenarios share one broker per session. */
    String name(String symbol) {
        return symbol + "-" + str("run");
    }

    /**
     * The first record timestamp of a scenario: the Python side passes the same one to both
     * brokers so timestamp facts compare; recent, so retention keeps the records.
     */
    long baseTimestamp() {
        return longOr("t0", System.currentTimeMillis() - 600_000);
    }

    String str(String key) {
        JsonNode v = node.get(key);
        if (v == null || v.isNull()) {
            throw new IllegalArgumentException("missing argument " + key);
        }
        return v.asText();
    }

    long longOr(String key, long fallback) {
        JsonNode v = node.get(key);
        return v == null || v.isNull() ? fallback : v.asLong();
    }

    int intOr(String key, int fallback) {
        JsonNode v = node.get(key);
        return v == null || v.isNull() ? fallback : v.asInt();
    }

    String strOr(String key, String fallback) {
        JsonNode v = node.get(key);
        return v == null || v.isNull() ? fallback : v.asText();
    }
}
