"""--command-config: Java properties parsing and the mapping to kafka-python options."""

from __future__ import annotations

import pytest

from ferry.errors import InputError
from ferry.kafka.config import client_settings, parse_jaas_options, parse_properties

pytestmark = pytest.mark.unit

PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr=t;x";'
)


def test_parse_properties_handles_comments_separators_and_continuations() -> None:
    text = "\n".join(
        [
            "# comment",
            "! also a comment",
            "a=1",
            "b : 2",
            "c 3",
            "  d=x\\",
            "    y",
            r"e=tab\there",
            r"f\=g=h",
            "empty=",
        ]
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "xy",
        "e": "tab\there",
        "f=g": "h",
        "empty": "",
    }


def test_parse_properties_rejects_dangling_continuation() -> None:
    with pytest.raises(InputError, match="continued line"):
        parse_properties("a=b\\", "cfg.properties")


def test_parse_jaas_options_reads_quoted_and_bare_values() -> None:
    assert parse_jaas_options(PLAIN_JAAS) == {"username": "alice", "password": "s3cr=t;x"}
    assert parse_jaas_options("X required serviceName=kafka;") == {"serviceName": "kafka"}


def test_sasl_plain_maps_to_kafka_python_options() -> None:
    settings = client_settings(
        {
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.truststore.location": "/etc/ca.pem",
            "ssl.truststore.type": "PEM",
            "ssl.endpoint.identification.algorithm": "",
            "request.timeout.ms": "5000",
        }
    )
    assert settings.options == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "s3cr=t;x",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_check_hostname": False,
        "request_timeout_ms": 5000,
    }
    assert settings.unknown_keys == ()


def test_ssl_keystore_pem_maps_to_cert_and_password() -> None:
    settings = client_settings(
        {
            "security.protocol": "SSL",
            "ssl.keystore.location": "/etc/client.pem",
            "ssl.keystore.type": "PEM",
            "ssl.key.password": "pw",
        }
    )
    assert settings.options["ssl_certfile"] == "/etc/client.pem"
    assert settings.options["ssl_password"] == "pw"


def test_unknown_and_ignored_keys() -> None:
    settings = client_settings({"linger.ms": "5", "ssl.protocol": "TLSv1.3", "zzz": "1"})
    assert settings.unknown_keys == ("linger.ms", "zzz")
    assert settings.options == {}


def test_sasl_without_mechanism_defaults_to_gssapi_like_kafka() -> None:
    settings = client_settings({"security.protocol": "SASL_PLAINTEXT"})
    assert settings.options["sasl_mechanism"] == "GSSAPI"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol: 'TLS' is not one of"),
        ({"sasl.mechanism": "MAGIC"}, "sasl.mechanism: 'MAGIC' is not one of"),
        ({"request.timeout.ms": "soon"}, "expected an integer"),
        ({"ssl.truststore.location": "/x.jks"}, "ssl.truststore.type JKS is not supported"),
        (
            {"ssl.keystore.location": "/x.p12", "ssl.keystore.type": "PKCS12"},
            "PKCS12 is not supported",
        ),
        ({"ssl.truststore.certificates": "-----BEGIN"}, "inline PEM"),
        ({"ssl.endpoint.identification.algorithm": "dns"}, "expected 'https'"),
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"},
            "needs username and password",
        ),
    ],
)
def test_invalid_settings_name_file_and_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        client_settings(props, "client.properties")
    assert str(info.value).startswith("client.properties: ")
    assert "\n" not in str(info.value)
