"""The secured sandbox's client side: the ``--command-config`` files of its users and listeners,
the certificates of its SSL listener (openssl), and the ACLs granted to its SCRAM users (Kafka's
AclCommand). The brokers' own settings are in :mod:`ferry.sandbox.layout`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ferry.sandbox.layout import PLAIN_MODULE, SASL_PASSWORD, SASL_USER, SCRAM, SCRAM_MODULE, SCRAM_USERS


def sasl_client_properties(bootstrap: str) -> str:
    """A ``--command-config`` file that logs in to the SASL listener as the sandbox's user."""
    return (
        f"# ferry --bootstrap-server {bootstrap} --command-config <this file>\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="{SASL_USER}" password="{SASL_PASSWORD}";\n'
    )


def ssl_client_properties(bootstrap: str, ca_file: Path) -> str:
    """A ``--command-config`` file for the SSL listener: PEM trust in the sandbox's CA, host name
    checked against the certificate (which names 127.0.0.1)."""
    return (
        f"# kafka-ferry sandbox, SSL: --bootstrap-server {bootstrap}\n"
        "security.protocol=SSL\n"
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={ca_file}\n"
        "ssl.endpoint.identification.algorithm=https\n"
    )


SSL_KEYSTORE = "broker-keystore.pem"
SSL_CA = "ca.pem"
SAN_EXTENSION = "subjectAltName=IP:127.0.0.1\n"
SAN_FILE = "san.ext"
KEYSTORE_PARTS = ("broker.key", "broker.pem", SSL_CA)
"""The files joined into the PEM keystore, in order: the brokers' key, their certificate, the CA."""
CERTIFICATE_FILES = ("ca.key", "ca.srl", "broker.csr", SAN_FILE, *KEYSTORE_PARTS, SSL_KEYSTORE)
"""Every file the sandbox's certificates leave in its folder (``down`` deletes them)."""


def ca_command(key: Path, cert: Path, subject: str, days: int) -> list[str]:
    """``openssl`` making a self-signed CA: its unencrypted key and its certificate."""
    new = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", str(days)]
    return [*new, "-keyout", str(key), "-out", str(cert), "-subj", subject]


def openssl_commands(folder: Path) -> list[list[str]]:
    """``openssl`` runs that make, in ``folder``, a CA (``ca.pem``) and the brokers' key and
    certificate signed by it for 127.0.0.1 (the keystore joins them: :data:`SSL_KEYSTORE`)."""
    key, cert, ca = (folder / n for n in KEYSTORE_PARTS)
    ca_key, csr = folder / "ca.key", folder / "broker.csr"
    request = ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr)]
    sign = ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key)]
    sign += ["-CAcreateserial", "-days", "30", "-out", str(cert), "-extfile", str(folder / SAN_FILE)]
    return [
        ca_command(ca_key, ca, "/CN=kafka-ferry sandbox CA", 30),
        [*request, "-subj", "/CN=127.0.0.1"],
        sign,
    ]


def scram_client_properties(bootstrap: str, user: str) -> str:
    """A ``--command-config`` file that logs in to the SASL listener as SCRAM user ``user``."""
    return (
        f"# kafka-ferry sandbox, SCRAM user {user}: --bootstrap-server {bootstrap}\n"
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={SCRAM}\n"
        f'sasl.jaas.config={SCRAM_MODULE} required username="{user}" password="{SCRAM_USERS[user]}";\n'
    )


def acl_args(bootstrap: str) -> list[list[str]]:
    """Arguments of ``org.apache.kafka.tools.AclCommand``, one run each, granting :data:`SCRAM_USERS`
    their rights over the PLAINTEXT listener ``bootstrap`` (whose ANONYMOUS is a super user)."""
    base = ["--bootstrap-server", bootstrap, "--add"]

    def allow(user: str, operations: Sequence[str], *resource: str) -> list[str]:
        ops = [arg for op in operations for arg in ("--operation", op)]
        return [*base, "--allow-principal", f"User:{user}", *ops, *resource]

    return [
        allow("operator", ["Alter", "Describe", "DescribeConfigs"], "--cluster"),
        allow("operator", ["Describe", "DescribeConfigs"], "--topic", "*"),
        allow("operator", ["Read", "Write", "Describe", "Create"], "--topic", "kafka-ferry-control"),
        allow("reader", ["Describe", "DescribeConfigs"], "--cluster"),
        allow("reader", ["Describe", "DescribeConfigs"], "--topic", "*"),
        allow("viewer", ["Describe"], "--cluster"),
        allow("viewer", ["Describe"], "--topic", "*"),
    ]
