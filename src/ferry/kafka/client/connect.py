"""Opening a kafka-python admin client so that a failed bootstrap says why and leaks nothing.

Also the plain TCP check that tells "nothing listens" from "the login was refused".
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any

import kafka.errors as kerrors
from kafka.admin import KafkaAdminClient


def new_admin_client(*, sasl_checked: bool = True, **config: Any) -> Any:
    """``KafkaAdminClient(**config)``, closed again if its constructor fails.

    kafka-python 3.0 starts its I/O thread and opens sockets before bootstrapping in ``__init__``
    and does not release them when bootstrap fails; with nothing returned, the caller could never
    close them. Building the object in two steps keeps a handle to close. ``sasl_checked``: a SASL
    bootstrap that timed out against brokers that take connections is told as a refused login
    (:func:`_sasl_refused`); without it, the timeout itself is raised.
    """
    client = KafkaAdminClient.__new__(KafkaAdminClient)
    try:
        client.__init__(**config)
    except BaseException as exc:
        auth_failure = _auth_failure(client)
        if hasattr(client, "_net"):
            # close() returns early unless _closed is False, which __init__ sets only on success.
            client._closed = False
            with suppress(Exception):
                client.close()
        if isinstance(exc, kerrors.KafkaTimeoutError):
            if auth_failure is None and sasl_checked and _sasl_refused(config):
                auth_failure = _refused_login()
            if auth_failure is not None:
                raise auth_failure from exc
        raise
    return client


def _refused_login() -> kerrors.SaslAuthenticationFailedError:
    return kerrors.SaslAuthenticationFailedError(
        "the brokers accept connections but ended every SASL login "
        "(wrong username or password, or a listener without SASL)"
    )


PROBE_S = 1.0
"""Longest wait for a bootstrap server's TCP connection before its turn is put last."""


def first_answering(servers: Sequence[str], timeout_ms: int, **config: Any) -> Any:
    """An admin client (:func:`new_admin_client`) bootstrapped from one of ``servers``.

    kafka-python 3.0 bootstraps from a server picked at random and gives that one attempt all the
    time left: a broker that is stopped (SIGSTOP, a hung process) takes the TCP connection and never
    answers, so with one such server among several the client's start failed after the whole
    timeout about once in as many tries (seen on the sandbox). Here each server is tried alone, in
    turn, with an equal share of the time left; those that take no TCP connection go last, so a
    broker that is down costs no share while another answers. Once bootstrapped the client learns
    every broker from the cluster's metadata. A login the brokers refuse is only inferred once
    every server has had its turn: a stopped broker, too, takes the connection and ends no login.
    """
    if len(servers) < 2:
        return new_admin_client(bootstrap_servers=list(servers), bootstrap_timeout_ms=timeout_ms, **config)
    deadline = time.monotonic() + timeout_ms / 1000
    up = [s for s in servers if accepts_connections(s, min(PROBE_S, timeout_ms / 1000 / len(servers)))]
    turns = [*up, *(s for s in servers if s not in up)]
    failure: kerrors.KafkaTimeoutError | None = None
    for left, server in zip(range(len(turns), 0, -1), turns, strict=True):
        share_ms = int((deadline - time.monotonic()) * 1000 / left)
        if share_ms <= 0:
            break
        try:
            return new_admin_client(
                sasl_checked=False, bootstrap_servers=[server], bootstrap_timeout_ms=share_ms, **config
            )
        except kerrors.KafkaTimeoutError as exc:  # no answer in its share: the next server
            failure = exc
    failure = failure or kerrors.KafkaTimeoutError(f"Unable to bootstrap from {list(servers)}")
    if _sasl_refused({**config, "bootstrap_servers": list(servers)}):
        raise _refused_login() from failure
    raise failure


def _sasl_refused(config: Mapping[str, Any]) -> bool:
    """Whether a SASL client that could not bootstrap can reach the brokers over TCP at all.

    A Kafka broker answers a failed SASL login with an error response and closes the connection
    at once; kafka-python 3.0 reads the response and the close in one go and drops the response,
    so the only trace it keeps is a bootstrap timeout. Reachable brokers plus a SASL login that
    never completes means the login was refused.
    """
    if not str(config.get("security_protocol", "")).startswith("SASL_"):
        return False
    return any(accepts_connections(address, 2.0) for address in config["bootstrap_servers"])


def _auth_failure(client: Any) -> Exception | None:
    """The SASL or authorization failure kafka-python met while bootstrapping, if any.

    kafka-python 3.0 retries a bootstrap broker that refuses the credentials until the bootstrap
    timeout and then reports only "Unable to bootstrap", which reads like an unreachable cluster.
    Its connection manager keeps the real cause per broker; surfacing it turns the misleading
    timeout into "authentication failed".
    """
    failures = getattr(getattr(client, "_manager", None), "_auth_failures", None)
    if not failures:
        return None
    failure = next(iter(failures.values()))
    return failure if isinstance(failure, Exception) else None


def accepts_connections(address: str, timeout_s: float) -> bool:
    """Whether ``host:port`` takes a TCP connection within ``timeout_s``: fast and quiet when not."""
    host, _, port = address.strip().rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False
