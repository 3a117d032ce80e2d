package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

/** Assertions inside scenarios: a failed check throws with a message that says what was seen. */
final class Check {
    private Check() {
    }

    static final class Failed extends AssertionError {
        Failed(String message) {
            super(message);
        }
    }

    static void that(boolean condition, String what, Object... args) {
        if (!condition) {
            throw new Failed(String.format(what, args));
        }
    }

    static <T> T equal(Object expected, T actual, String what) {
        if (!Objects.equals(expected, actual)) {
            throw new Failed(what + ": expected <" + expected + "> but was <" + actual + ">");
        }
        return actual;
    }

    /** Polls `condition` until it holds or `timeoutMs` passes: the only way scenarios wait. */
    static void eventually(long timeoutMs, String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new Failed("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            Thread.sleep(20);  // a bounded poll of a condition
        }
    }

    /**
     * Runs `action`, which must fail with `expected` (directly, or as the cause of an
     * ExecutionException or KafkaException wrapper); returns the error's class and message
     * as facts, which the Python side compares between Kafka and asyncbroker.
     */
    static ObjectNode fails(Class<? extends Throwable> expected, String what, Callable<?> action) {
        Throwable error;
        try {
            Object result = action.call();
            throw new Failed(what + ": expected " + expected.getSimpleName() + " but it succeeded with " + result);
        } catch (Failed f) {
            throw f;
        } catch (Throwable t) {
            error = t;
        }
        Throwable found = find(error, expected);
        if (found == null) {
            throw new Failed(what + ": expected " + expected.getSimpleName() + " but got " + Main.describe(error));
        }
        ObjectNode out = Json.object();
        out.put("error", found.getClass().getSimpleName());
        out.put("message", found.getMessage());
        return out;
    }

    static Throwable find(Throwable error, Class<? extends Throwable> expected) {
        for (Throwable c = error; c != null; c = c.getCause()) {
            if (expected.isInstance(c)) {
                return c;
            }
            if (!(c instanceof ExecutionException) && !(c instanceof org.apache.kafka.common.KafkaException)
                    && !(c instanceof java.util.concurrent.CompletionException)) {
                break;
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return null;
    }
}
