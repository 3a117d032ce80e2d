"""The sockets of each broker, as the kernel sees them: Kafka's SocketServer sets SO_SNDBUF from
socket.send.buffer.bytes and TCP keepalive on every accepted socket, and SO_RCVBUF from
socket.receive.buffer.bytes on its listening socket, which accepted sockets inherit (102400
each by default; the kernel keeps twice that); its listening socket's backlog is
socket.listen.backlog.size (50)."""

from __future__ import annotations

from socket_stats import SocketStats, accepted_socket_of, listen_backlog


def test_accepted_sockets_configured_as_kafka_configures_them(brokers) -> None:  # type: ignore[no-untyped-def]
    kafka = accepted_socket_of(brokers.kafka.bootstrap)
    assert kafka == SocketStats(receive_buffer=204800, send_buffer=204800, keepalive=True)
    if brokers.ours is not None:  # (--kafka-only runs Kafka alone)
        assert accepted_socket_of(brokers.ours.bootstrap) == kafka


def test_listen_backlog_as_kafka_sets_it(brokers) -> None:  # type: ignore[no-untyped-def]
    assert listen_backlog(brokers.kafka.bootstrap) == 50
    if brokers.ours is not None:
        assert listen_backlog(brokers.ours.bootstrap) == 50


def test_the_connection_creation_rate_holds_the_acceptor_back(brokers) -> None:  # type: ignore[no-untyped-def]
    """max.connection.creation.rate=2, cluster-wide at runtime, on a broker with one client
    listener: about 20 connections go through at once (a rate over 11 one-second samples), then
    each waits up to a second before it is served, and every one is served. Put back at the end
    (also on failure: the brokers are shared by the session).

    The rate counts every connection of the last quota.window.num × quota.window.size.seconds,
    the earlier tests' too, whether or not a limit was set then. When a sample holding some of
    them expires mid-scenario, the rate drops by as much and the throttle lifts early: on each
    broker, at a time set by how fast the earlier tests ran on it. So the scenario first lets
    one whole quota window pass with no connection but its own."""
    import time

    from admin_steps import BROKER, DELETE, SET, describe_configs, incremental_alter_configs
    from differential import Connection, ScenarioRun, entity, request_class_name

    def served_after(run: ScenarioRun) -> float:
        started = time.monotonic()
        conn = Connection(run.bootstrap, timeout=10.0)
        try:
            request = entity(18, 3, request_class_name(18, 3), client_software_name="t", client_software_version="1")
            assert conn.receive(18, 3, conn.send(request)).error_code.value == 0
        finally:
            conn.close()
        return time.monotonic() - started

    def scenario(run: ScenarioRun) -> None:
        window = describe_configs(run, [(BROKER, "1", ("quota.window.num", "quota.window.size.seconds"))],
                                  label="the quota window")
        samples, sample_seconds = (int(c.value) for c in window.results[0].configs)
        # Not a wait for an event: the broker's rate forgets a connection only by its age.
        quiet_at = time.monotonic() + samples * sample_seconds
        run.wait_until(lambda: time.monotonic() >= quiet_at, "a quota window with no earlier test's connection",
                       timeout=samples * sample_seconds + 10)
        incremental_alter_configs(run, [(BROKER, "", [("max.connection.creation.rate", SET, "2")])], label="set")
        try:
            # Kafka takes the change through its metadata log: connect once it is in force.
            run.wait_until(lambda: describe_configs(run, [(BROKER, "1", ("max.connection.creation.rate",))],
                                                    record=False).results[0].configs[0].value == "2",
                           "max.connection.creation.rate=2 in force")
            waits = [served_after(run) for _ in range(26)]
            run.note("at least 18 of the first 20 connections served within 0.4 s", sum(w < 0.4 for w in waits[:20]) >= 18)
            run.note("at least 3 of the last 5 connections waited 0.4 s or more", sum(w >= 0.4 for w in waits[-5:]) >= 3)
        finally:
            incremental_alter_configs(run, [(BROKER, "", [("max.connection.creation.rate", DELETE, None)])],
                                      label="put back")

    brokers.compare(scenario)
