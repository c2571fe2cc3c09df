"""Pure parts of the sandbox: node plan, racks, properties, command lines, state file."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ferry.kafka.config import client_settings, parse_properties
from ferry.sandbox.jars import is_complete, kafka_home
from ferry.sandbox.layout import (
    SASL_PASSWORD,
    SASL_USER,
    ClusterSpec,
    Role,
    Tiered,
    bootstrap_servers,
    data_dirs,
    format_args,
    java_command,
    jvm_options,
    new_cluster_id,
    plan_nodes,
    rack_name,
    render_properties,
    server_properties,
)
from ferry.sandbox.process import free_ports
from ferry.sandbox.security import sasl_client_properties
from ferry.sandbox.state import NodeState, SandboxState, load_state, save_state

pytestmark = pytest.mark.unit


def test_plan_nodes_gives_controllers_then_racked_brokers() -> None:
    nodes = plan_nodes(ClusterSpec(brokers=4, racks=2), [9000, 9001, 9002, 9003, 9004])
    assert [(n.node_id, n.role, n.port, n.rack) for n in nodes] == [
        (1000, Role.CONTROLLER, 9000, None),
        (1, Role.BROKER, 9001, "r0"),
        (2, Role.BROKER, 9002, "r1"),
        (3, Role.BROKER, 9003, "r0"),
        (4, Role.BROKER, 9004, "r1"),
    ]
    assert bootstrap_servers(nodes) == "127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003,127.0.0.1:9004"


def test_plan_nodes_needs_one_distinct_port_per_node() -> None:
    with pytest.raises(ValueError, match="distinct ports"):
        plan_nodes(ClusterSpec(brokers=2), [1, 1, 2])


@pytest.mark.parametrize(
    "kwargs",
    [{"brokers": 0}, {"controllers": 2}, {"racks": -1}, {"heap_mb": 1024}, {"log_dirs": 0}, {"log_dirs": 9}],
)
def test_cluster_spec_rejects_bad_values(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        ClusterSpec(**kwargs)


def test_rack_name_round_robin_or_none() -> None:
    assert [rack_name(i, 3) for i in range(4)] == ["r0", "r1", "r2", "r0"]
    assert rack_name(0, 0) is None


def test_three_controllers_form_a_static_voter_set() -> None:
    nodes = plan_nodes(ClusterSpec(brokers=1, controllers=3), [7000, 7001, 7002, 7003])
    props = server_properties(nodes[3], nodes, [Path("/d")])
    assert props["controller.quorum.voters"] == (
        "1000@127.0.0.1:7000,1001@127.0.0.1:7001,1002@127.0.0.1:7002"
    )
    assert props["offsets.topic.replication.factor"] == "1"


def test_broker_and_controller_properties() -> None:
    nodes = plan_nodes(ClusterSpec(brokers=4), [9000, 9001, 9002, 9003, 9004])
    controller = server_properties(nodes[0], nodes, [Path("/data/c")])
    broker = server_properties(nodes[2], nodes, [Path("/data/b")])
    assert controller["process.roles"] == "controller"
    assert controller["listeners"] == "CONTROLLER://127.0.0.1:9000"
    assert "broker.rack" not in controller
    assert broker["process.roles"] == "broker"
    assert broker["node.id"] == "2"
    assert broker["broker.rack"] == "r1"
    assert broker["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9002"
    assert broker["auto.create.topics.enable"] == "false"
    assert broker["offsets.topic.replication.factor"] == "3"
    assert broker["log.dirs"] == "/data/b"
    jbod = server_properties(nodes[2], nodes, data_dirs(Path("/n"), 3))
    assert jbod["log.dirs"] == "/n/data,/n/data2,/n/data3"
    assert render_properties({"a": "1", "b": "x"}) == "a=1\nb=x\n"


def test_java_command_keeps_the_classpath_wildcard_for_the_jvm() -> None:
    options = jvm_options(384, Path("/n/log4j2.xml"))
    argv = java_command("java", Path("/lib"), "kafka.Kafka", ["/n/server.properties"], options)
    assert argv[0] == "java"
    assert argv[-3:] == ["/lib/*", "kafka.Kafka", "/n/server.properties"]
    assert "-Xmx384m" in argv
    assert "-Dlog4j2.configurationFile=/n/log4j2.xml" in argv
    assert "-XX:ErrorFile=/n/hs_err_pid%p.log" in argv  # a JVM crash report stays in the node's folder
    assert format_args("abc", Path("/p")) == [
        "format", "--ignore-formatted", "-t", "abc", "-c", "/p"
    ]  # fmt: skip


def test_cluster_id_is_22_url_safe_chars() -> None:
    assert new_cluster_id(bytes(range(16))) == "AAECAwQFBgcICQoLDA0ODw"
    with pytest.raises(ValueError):
        new_cluster_id(b"short")


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))


def test_kafka_home_honours_env_and_marker(tmp_path: Path) -> None:
    assert kafka_home({"FERRY_KAFKA_HOME": str(tmp_path)}) == tmp_path
    assert kafka_home({}).name.startswith("kafka-4.")
    assert not is_complete(tmp_path)


def test_state_round_trips_through_the_file(tmp_path: Path) -> None:
    nodes = plan_nodes(ClusterSpec(brokers=1), [5000, 5001])
    state = SandboxState(
        "id",
        "127.0.0.1:5001",
        "4.3.1",
        "/lib",
        256,
        tuple(NodeState.of(n, 100 + i, tmp_path / n.name) for i, n in enumerate(nodes)),
    )
    assert load_state(tmp_path) is None
    save_state(tmp_path, state)
    loaded = load_state(tmp_path)
    assert loaded == state
    assert loaded is not None
    assert loaded.node(1).spec == nodes[1]
    assert loaded.brokers == (state.nodes[1],)


def test_sasl_gives_each_broker_a_second_listener_with_a_static_plain_user(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=2, sasl=True)
    nodes = plan_nodes(spec, [5000, 5001, 5002, 5003, 5004])
    assert [n.sasl_port for n in nodes] == [None, 5003, 5004]
    assert bootstrap_servers(nodes, sasl=True) == "127.0.0.1:5003,127.0.0.1:5004"
    props = server_properties(nodes[1], nodes, [tmp_path])
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:5001,SASL_PLAINTEXT://127.0.0.1:5003"
    assert props["advertised.listeners"] == props["listeners"]
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert "SASL_PLAINTEXT:SASL_PLAINTEXT" in props["listener.security.protocol.map"]
    jaas = props["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert jaas.endswith(f'required user_{SASL_USER}="{SASL_PASSWORD}";')
    assert "SASL" not in server_properties(nodes[0], nodes, [tmp_path])["listener.security.protocol.map"]


def test_sasl_client_properties_map_to_plain_credentials() -> None:
    text = sasl_client_properties("127.0.0.1:5003")
    settings = client_settings(parse_properties(text))
    assert settings.options == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": SASL_USER,
        "sasl_plain_password": SASL_PASSWORD,
    }
    assert settings.unknown_keys == ()


def test_sasl_needs_a_port_per_broker_more() -> None:
    with pytest.raises(ValueError, match="need 5 distinct ports"):
        plan_nodes(ClusterSpec(brokers=2, sasl=True), [1, 2, 3])


def test_sasl_and_ssl_give_each_broker_three_listeners_and_every_node_an_authorizer(tmp_path: Path) -> None:
    spec = ClusterSpec(brokers=2, sasl=True, ssl=True)
    nodes = plan_nodes(spec, [5000, 5001, 5002, 5003, 5004, 5005, 5006])
    assert [(n.sasl_port, n.ssl_port) for n in nodes] == [(None, None), (5003, 5005), (5004, 5006)]
    assert bootstrap_servers(nodes, ssl=True) == "127.0.0.1:5005,127.0.0.1:5006"
    keystore = tmp_path / "keystore.pem"
    props = server_properties(nodes[1], nodes, [tmp_path], keystore)
    assert props["listeners"] == (
        "PLAINTEXT://127.0.0.1:5001,SASL_PLAINTEXT://127.0.0.1:5003,SSL://127.0.0.1:5005"
    )
    assert props["listener.security.protocol.map"].endswith(",SSL:SSL")
    assert props["listener.name.ssl.ssl.keystore.location"] == str(keystore)
    assert props["listener.name.sasl_plaintext.sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-512"
    controller = server_properties(nodes[0], nodes, [tmp_path])
    for node_props in (props, controller):
        assert node_props["authorizer.class.name"].endswith("StandardAuthorizer")
        assert "User:ANONYMOUS" in node_props["super.users"]


def test_scram_users_are_created_when_storage_is_formatted(tmp_path: Path) -> None:
    args = format_args("id", tmp_path / "server.properties", scram=True)
    assert args[args.index("--add-scram") + 1] == "SCRAM-SHA-512=[name=admin,password=admin-secret]"
    assert args.count("--add-scram") == 4
    assert "--add-scram" not in format_args("id", tmp_path / "server.properties")


def test_tiered_brokers_get_local_tiered_storage_in_one_shared_folder() -> None:
    nodes = plan_nodes(ClusterSpec(brokers=4, tiered=True), [9000, 9001, 9002, 9003, 9004])
    tiered = Tiered(Path("/s/tiered"), fetch_last_tiered_offset=True)
    broker = server_properties(nodes[1], nodes, [Path("/b")], tiered=tiered)
    assert broker["remote.log.storage.system.enable"] == "true"
    assert broker["remote.log.storage.manager.class.name"].endswith(".LocalTieredStorage")
    assert broker["rsm.config.dir"] == "/s/tiered"
    assert broker["follower.fetch.last.tiered.offset.enable"] == "true"
    assert broker["rlmm.config.remote.log.metadata.topic.replication.factor"] == "3"
    controller = server_properties(nodes[0], nodes, [Path("/c")], tiered=tiered)
    assert "rsm.config.dir" not in controller
    assert controller["remote.log.storage.system.enable"] == "true"  # it validates topic configs
    with pytest.raises(ValueError, match="needs tiered storage"):
        ClusterSpec(fetch_last_tiered_offset=True)
