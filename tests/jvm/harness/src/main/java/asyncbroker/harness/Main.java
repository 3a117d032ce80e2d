package asyncbroker.harness;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The Java client harness: one JVM per pytest session, driven over stdin/stdout.
 *
 * <p>Each stdin line is a JSON command {"id": n, "scenario": "name", "args": {...}}; each
 * answer is one stdout line {"id": n, "ok": true, "facts": {...}} or {"id": n, "ok": false,
 * "error": "...", "trace": "..."}. Each command runs on a worker thread of its own with a
 * deadline, so a scenario that hangs is reported instead of stalling the session, and commands
 * sent together run together (the Python side runs a scenario on Kafka and on asyncbroker at
 * once); answers come in the order they finish, matched by id. The JVM's own System.out is sent
 * to stderr: only the answers reach the protocol stream, one whole line at a time.
 */
public final class Main {
    /** Name -> scenario: the registry the Python side calls into. */
    static final Map<String, Scenario> SCENARIOS = new TreeMap<>();

    static {
        ProducerScenarios.register(SCENARIOS);
        ConsumerScenarios.register(SCENARIOS);
        RebalanceScenarios.register(SCENARIOS);
        AdminScenarios.register(SCENARIOS);
        GroupAdminScenarios.register(SCENARIOS);
        TransactionScenarios.register(SCENARIOS);
        ConsumerProtocolScenarios.register(SCENARIOS);
        ShareConsumerScenarios.register(SCENARIOS);
        ShareGroupOffsetsScenarios.register(SCENARIOS);
        TieredStorageScenarios.register(SCENARIOS);
    }

    private Main() {
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);  // invariant: nothing but answers reaches the protocol stream
        ExecutorService worker = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "scenario");
            t.setDaemon(true);
            return t;
        });
        ExecutorService commands = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "command");
            t.setDaemon(true);
            return t;
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        protocol.println(Json.MAPPER.writeValueAsString(ready()));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode command = Json.MAPPER.readTree(line);
            commands.submit(() -> {
                String answer = Json.MAPPER.writeValueAsString(execute(worker, command));
                synchronized (protocol) {  // invariant: answers never interleave within a line
                    protocol.println(answer);
                }
                return null;
            });
        }
        commands.shutdown();
        commands.awaitTermination(10, TimeUnit.MINUTES);  // stdin closed: let running commands answer
        worker.shutdownNow();
        System.exit(0);  // client threads that outlive a failed scenario must not keep the JVM alive
    }

    private static ObjectNode ready() {
        ObjectNode out = Json.object();
        out.put("ready", true);
        out.putPOJO("scenarios", SCENARIOS.keySet());
        return out;
    }

    private static ObjectNode execute(ExecutorService worker, JsonNode command) {
        ObjectNode answer = Json.object();
        answer.set("id", command.get("id"));
        String name = command.path("scenario").asText();
        Scenario scenario = SCENARIOS.get(name);
        if (scenario == null) {
            answer.put("ok", false);
            answer.put("error", "unknown scenario " + name + "; known: " + SCENARIOS.keySet());
            return answer;
        }
        Args args = new Args(command.path("args"));
        long timeoutMs = args.longOr("timeout_ms", 90_000);
        Future<ObjectNode> future = worker.submit(() -> scenario.run(args));
        try {
            ObjectNode facts = future.get(timeoutMs, TimeUnit.MILLISECONDS);
            answer.put("ok", true);
            answer.set("facts", facts);
        } catch (TimeoutException e) {
            future.cancel(true);
            answer.put("ok", false);
            answer.put("error", "scenario " + name + " did not finish within " + timeoutMs + " ms");
        } catch (ExecutionException e) {
            answer.put("ok", false);
            answer.put("error", describe(e.getCause()));
            answer.put("trace", trace(e.getCause()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            answer.put("ok", false);
            answer.put("error", "interrupted");
        }
        return answer;
    }

    static String describe(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (sb.length() > 0) {
                sb.append(" <- ");
            }
            sb.append(c.getClass().getName()).append(": ").append(c.getMessage());
            if (c.getCause() == c) {
                break;
            }
        }
        return sb.toString();
    }

    private static String trace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        return w.toString();
    }
}
