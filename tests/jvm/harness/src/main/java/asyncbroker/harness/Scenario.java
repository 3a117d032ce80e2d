package asyncbroker.harness;

import com.fasterxml.jackson.databind.node.ObjectNode;

/** One thing a user does with the client: asserts inside, returns facts for Python to compare. */
@FunctionalInterface
interface Scenario {
    ObjectNode run(Args args) throws Exception;
}
