"""Connection secrets are never printed, in any form a user can write a source.

A Postgres source is a URL (`postgresql://user:password@host/db?password=...`, percent-encoded or
not: libpq accepts `#`, `?` and `@` unencoded in many setups) or a libpq key=value string
(`host=h dbname=d password='a b'`), and libpq also reads $PGPASSWORD. `redact` gives the form to
show; `remember` notes the secret strings themselves, which `scrub` removes from any message
(psycopg and libpq quote a malformed connection string whole). No imports beyond the stdlib:
error lines use this on the fast path.
"""

from __future__ import annotations

import os
import re
from functools import cache
from urllib.parse import unquote

MASK = "***"
_KNOWN: set[str] = set()

# libpq's connection keywords (a key=value string starts with one of them)
PG_KEYWORDS = frozenset(
    [
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "require_auth",
        "channel_binding",
        "connect_timeout",
        "client_encoding",
        "options",
        "application_name",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "replication",
        "gssencmode",
        "sslmode",
        "requiressl",
        "sslcompression",
        "sslcert",
        "sslkey",
        "sslpassword",
        "sslcertmode",
        "sslrootcert",
        "sslcrl",
        "sslcrldir",
        "sslsni",
        "requirepeer",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "krbsrvname",
        "gsslib",
        "gssdelegation",
        "service",
        "target_session_attrs",
        "load_balance_hosts",
    ]
)
_SECRET_KEYS = r"(?:ssl)?password"


# (compiled when first needed: every start asks of each argument, and one holding neither `=` nor
# `://`, as a file's path, holds no secret)
@cache
def _url() -> re.Pattern[str]:
    return re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)(.*)$", re.S)


@cache
def _kv_secret() -> re.Pattern[str]:
    return re.compile(rf"\b({_SECRET_KEYS})(\s*=\s*)('(?:[^'\\]|\\.)*'?|\S*)", re.I)


@cache
def _query_secret() -> re.Pattern[str]:
    return re.compile(rf"([?&]{_SECRET_KEYS}=)([^&#\s]*)", re.I)


def _plain(spec: str) -> bool:
    """Neither a URL nor a key=value: nothing in `spec` can be a secret's spelling."""
    return "=" not in spec and "://" not in spec


def is_conninfo(spec: str) -> bool:
    """A libpq key=value connection string (`host=h dbname=d ...`)?"""
    if "=" not in spec:
        return False
    m = re.match(r"^\s*([A-Za-z_]+)\s*=", spec)
    return m is not None and m.group(1).lower() in PG_KEYWORDS


def redact(spec: str) -> str:
    """`spec` as it may be shown: passwords (user info, query, key=value) replaced by ***."""
    if _plain(spec):
        return spec
    m = _url().match(spec)
    if m:
        scheme, rest = m.groups()
        if "@" in rest:  # user info ends at the last @: a password may hold @ # ? / unencoded
            userinfo, host = rest.rsplit("@", 1)
            if ":" in userinfo:
                userinfo = f"{userinfo.split(':', 1)[0]}:{MASK}"
            rest = f"{userinfo}@{host}"
        return scheme + _query_secret().sub(rf"\1{MASK}", rest)
    if is_conninfo(spec) or _kv_secret().search(spec):
        return _kv_secret().sub(rf"\1\2{MASK}", spec)
    return spec


def secrets_of(spec: str) -> list[str]:
    """The secret strings a source spec holds, in every spelling (raw and percent-decoded)."""
    if _plain(spec):
        return []
    out: list[str] = []
    m = _url().match(spec)
    if m and "@" in m.group(2):
        userinfo = m.group(2).rsplit("@", 1)[0]
        if ":" in userinfo:
            password = userinfo.split(":", 1)[1]
            out += [password, unquote(password)]
    for q in _query_secret().finditer(spec):
        out += [q.group(2), unquote(q.group(2))]
    if not m:
        for kv in _kv_secret().finditer(spec):
            value = kv.group(3)
            if value.startswith("'"):
                value = re.sub(r"\\(.)", r"\1", value[1:-1] if value.endswith("'") and len(value) > 1 else value[1:])
            out += [value, kv.group(3)]
    return [s for s in out if s]


def remember(*secrets: str | None) -> None:
    """Secrets to scrub from every message from now on (a source's password, an API key, ...)."""
    _KNOWN.update(s for s in secrets if s and len(s) >= 3)
    if pg := os.environ.get("PGPASSWORD"):
        _KNOWN.add(pg)


def scrub(text: str) -> str:
    """`text` without any remembered secret (longest first) nor a password= value."""
    for secret in sorted(_KNOWN, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text if "=" not in text else _kv_secret().sub(rf"\1\2{MASK}", text)
