"""Kafka client properties (``--command-config``) to kafka-python options. Pure: no I/O, no kafka.

Kafka's own tools take a Java properties file with ``security.protocol``, ``sasl.*`` and ``ssl.*``
keys; ferry accepts the same file so an operator can reuse it. Java-only settings (JKS keystores,
inline PEM) have no kafka-python equivalent: they are rejected with a hint rather than silently
dropped, because connecting without the intended TLS or credentials would be worse than failing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ferry.errors import InputError

SECURITY_PROTOCOLS = frozenset({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"})
SASL_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER"})
_PASSWORD_MECHANISMS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})

# Keys that are valid for Java clients but mean nothing to kafka-python (or are implied by the PEM
# files it uses); accepted without a warning.
_IGNORED = frozenset(
    {
        # The store types are checked in _check_ssl_stores: only PEM files reach kafka-python.
        "ssl.truststore.type",
        "ssl.keystore.type",
        "ssl.truststore.password",
        "ssl.keystore.password",
        "ssl.protocol",
        "ssl.enabled.protocols",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.secure.random.implementation",
        "sasl.login.class",
        "default.api.timeout.ms",
    }
)

# Numeric Java client keys with a same-meaning kafka-python option.
_INT_KEYS = {
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "send.buffer.bytes": "send_buffer_bytes",
    "receive.buffer.bytes": "receive_buffer_bytes",
}


@dataclass(frozen=True, slots=True)
class ClientSettings:
    """kafka-python keyword options, plus the property keys that were not understood."""

    options: Mapping[str, Any]
    unknown_keys: tuple[str, ...] = ()


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse Java ``.properties`` text: ``#``/``!`` comments, ``=``/``:``/space separators,
    backslash line continuations and the usual escapes.

    Raises:
        InputError: a line has a key but the file ends inside a continuation.
    """
    props: dict[str, str] = {}
    for line in _logical_lines(text, source):
        key, value = _split_entry(line)
        props[_unescape(key)] = _unescape(value)
    return props


def _logical_lines(text: str, source: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        stripped = raw.lstrip()
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        pending += stripped
        # An odd number of trailing backslashes continues the entry on the next line.
        trailing = len(pending) - len(pending.rstrip("\\"))
        if trailing % 2 == 1:
            pending = pending[:-1]
            continue
        lines.append(pending)
        pending = ""
    if pending:
        raise InputError(f"{source}: file ends inside a continued line: {pending[:40]!r}")
    return lines


_SEPARATOR = re.compile(r"(?<!\\)(?:\s*[=:]\s*|\s+)")


def _split_entry(line: str) -> tuple[str, str]:
    match = _SEPARATOR.search(line)
    if match is None:
        return line, ""
    return line[: match.start()], line[match.end() :]


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        char = match.group(1)
        if char.startswith("u"):
            return chr(int(char[1:], 16))
        return _ESCAPES.get(char, char)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


_JAAS_OPTION = re.compile(r"""(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))""")


def parse_jaas_options(jaas: str) -> dict[str, str]:
    """The ``key="value"`` options of a ``sasl.jaas.config`` value (module and flag dropped)."""
    return {
        m.group(1): m.group(2) if m.group(2) is not None else m.group(3) for m in _JAAS_OPTION.finditer(jaas)
    }


def client_settings(props: Mapping[str, str], source: str = "<command-config>") -> ClientSettings:
    """Map Kafka client properties to kafka-python options.

    Raises:
        InputError: a value is invalid, or a setting cannot be honoured by kafka-python
            (e.g. a JKS truststore); the message names the file and key.
    """
    options: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in props.items():
        handler = _HANDLERS.get(key)
        if handler is not None:
            handler(options, value.strip(), f"{source}: {key}")
        elif key in _INT_KEYS:
            options[_INT_KEYS[key]] = _int_value(value, f"{source}: {key}")
        elif key not in _IGNORED:
            unknown.append(key)
    _check_ssl_stores(props, source)
    _check_sasl(options, source)
    return ClientSettings(options, tuple(sorted(unknown)))


def _int_value(value: str, where: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise InputError(f"{where}: expected an integer, got {value!r}") from None


def _choice(allowed: frozenset[str], target: str) -> Callable[[dict[str, Any], str, str], None]:
    def handle(options: dict[str, Any], value: str, where: str) -> None:
        if value.upper() not in allowed:
            raise InputError(f"{where}: {value!r} is not one of {', '.join(sorted(allowed))}")
        options[target] = value.upper()

    return handle


def _copy(target: str) -> Callable[[dict[str, Any], str, str], None]:
    def handle(options: dict[str, Any], value: str, where: str) -> None:
        options[target] = value

    return handle


def _jaas(options: dict[str, Any], value: str, where: str) -> None:
    jaas = parse_jaas_options(value)
    if "username" in jaas:
        options["sasl_plain_username"] = jaas["username"]
    if "password" in jaas:
        options["sasl_plain_password"] = jaas["password"]
    if "serviceName" in jaas:
        options["sasl_kerberos_service_name"] = jaas["serviceName"]


def _hostname_check(options: dict[str, Any], value: str, where: str) -> None:
    # Kafka's empty value turns host name verification off; "https" (the default) keeps it on.
    if value.lower() not in ("", "https"):
        raise InputError(f"{where}: expected 'https' or an empty value, got {value!r}")
    options["ssl_check_hostname"] = value.lower() == "https"


def _ignore_bootstrap(options: dict[str, Any], value: str, where: str) -> None:
    # --bootstrap-server always wins, as in Kafka's tools; nothing to map.
    return


_HANDLERS: dict[str, Callable[[dict[str, Any], str, str], None]] = {
    "security.protocol": _choice(SECURITY_PROTOCOLS, "security_protocol"),
    "sasl.mechanism": _choice(SASL_MECHANISMS, "sasl_mechanism"),
    "sasl.jaas.config": _jaas,
    "sasl.kerberos.service.name": _copy("sasl_kerberos_service_name"),
    "ssl.truststore.location": _copy("ssl_cafile"),
    "ssl.keystore.location": _copy("ssl_certfile"),
    "ssl.key.password": _copy("ssl_password"),
    "ssl.endpoint.identification.algorithm": _hostname_check,
    "client.id": _copy("client_id"),
    "bootstrap.servers": _ignore_bootstrap,
}


def _check_ssl_stores(props: Mapping[str, str], source: str) -> None:
    for store in ("truststore", "keystore"):
        location = props.get(f"ssl.{store}.location")
        kind = props.get(f"ssl.{store}.type", "JKS").strip().upper()
        if location is not None and kind != "PEM":
            raise InputError(
                f"{source}: ssl.{store}.type {kind} is not supported, only PEM files are",
                hint=f"convert the {store} to PEM (keytool -importkeystore, openssl pkcs12) "
                f"and set ssl.{store}.type=PEM",
            )
    for key in (
        "ssl.truststore.certificates",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
    ):
        if key in props:
            raise InputError(
                f"{source}: {key} (inline PEM) is not supported",
                hint="put the PEM in a file; use ssl.truststore.location / ssl.keystore.location",
            )


def _check_sasl(options: dict[str, Any], source: str) -> None:
    if options.get("security_protocol", "PLAINTEXT").startswith("SASL_"):
        # Kafka's clients default to GSSAPI; kafka-python has no default, so mirror Kafka.
        options.setdefault("sasl_mechanism", "GSSAPI")
    mechanism = options.get("sasl_mechanism")
    if mechanism in _PASSWORD_MECHANISMS and not (
        options.get("sasl_plain_username") and options.get("sasl_plain_password") is not None
    ):
        raise InputError(
            f"{source}: sasl.mechanism {mechanism} needs username and password in sasl.jaas.config",
            hint='sasl.jaas.config=...LoginModule required username="u" password="p";',
        )
