"""Sizes and rates as operators write them: ``500GB``, ``2TiB``, ``40MB/s``, ``1048576``.

Decimal prefixes are powers of 1000 (GB = 10^9 bytes), binary ones powers of 1024 (GiB = 2^30),
as Kafka's own docs and ``df -H`` / ``df -h`` use them.
"""

from __future__ import annotations

import re

_DECIMAL = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?)B?\s*", flags=re.IGNORECASE)


def parse_size(text: str) -> int:
    """``"500GB"`` -> 500 * 10**9, ``"2TiB"`` -> 2 * 2**40, ``"1024"`` -> 1024 bytes.

    Raises:
        ValueError: not a size of at least one byte (the message quotes ``text``).
    """
    match = _SIZE.fullmatch(text)
    if match is None or (match.group(3) and not match.group(2)):
        raise ValueError(f"expected a size such as 500GB or 2TiB, got {text!r}")
    number, prefix, binary = match.groups()
    prefix = prefix.upper()
    scale = 1024 ** ("KMGTP".index(prefix) + 1) if binary else _DECIMAL[prefix]
    size = int(float(number) * scale)
    if size < 1:
        raise ValueError(f"expected a size of at least 1 byte, got {text!r}")
    return size


def parse_rate(text: str) -> int:
    """``"40MB/s"`` (or ``"40MB"``) -> 40_000_000 bytes per second.

    Raises:
        ValueError: not a rate of at least one byte per second.
    """
    body = re.sub(r"/\s*s\s*$", "", text.strip(), flags=re.IGNORECASE)
    try:
        return parse_size(body)
    except ValueError:
        raise ValueError(f"expected a rate such as 40MB/s or 1048576, got {text!r}") from None
