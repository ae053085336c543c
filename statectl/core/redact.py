"""`export --redact`: an export a user can attach to a bug report.

Rows are rewritten in their own format (msgpack through ormsgpack, as LangGraph writes it, ext
payloads included; JSON; the Postgres and server envelopes of export files), so every command reads
a redacted export as it reads any other. Text that looks like a secret (API keys and tokens by
their published prefixes, bearer tokens, JWTs) or an e-mail address becomes `[REDACTED]`, as does
the whole value of a `--redact-key` key and every match of a `--redact-pattern`. A value that
cannot be rewritten (a pickle, an encrypted value) is refused, never passed through.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import orjson
import ormsgpack

from statectl.codec.decode import b64, unb64
from statectl.codec.formats import INMEM_TYPE, PG_TYPE, SERVER_TYPE
from statectl.errors import StatectlError

MARK = "[REDACTED]"
BUILTIN = [
    ("API key", r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{20,}"),  # OpenAI, Anthropic, Stripe
    ("API key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    ("API key", r"\bAIza[0-9A-Za-z_\-]{35}\b"),  # Google
    ("API key", r"\blsv2_(?:pt|sk)_[A-Za-z0-9_]{20,}"),  # LangSmith
    ("token", r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub
    ("token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),  # Slack
    ("token", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWT
    ("token", r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*"),
    ("e-mail address", r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}\b"),
]
URL_PASSWORD = ("password in a URL", r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s:/@\[\]]*:)([^\s@/]+)(@)")
"""`scheme://user:PASSWORD@host` (a database URL in state or metadata): the password alone goes."""
KEYS = ("password", "passwd", "secret", "api_key", "apikey", "token", "access_token", "authorization")
"""Keys whose whole value is a secret, wherever they are (as --redact-key, with the built-in rules)."""


class Unredactable(StatectlError):
    """A value whose format statectl cannot rewrite."""


class Redactor:
    def __init__(self, builtin: bool = True, keys: tuple[str, ...] = (), patterns: tuple[str, ...] = ()) -> None:
        self.rules: list[tuple[str, re.Pattern[str]]] = []
        self.url = re.compile(URL_PASSWORD[1]) if builtin else None
        if builtin:
            self.rules += [(kind, re.compile(rx)) for kind, rx in BUILTIN]
        for rx in patterns:
            try:
                self.rules.append(("match of --redact-pattern", re.compile(rx)))
            except re.error as exc:
                raise StatectlError(f"--redact-pattern {rx!r} is not a regular expression ({exc})") from None
        self.keys = frozenset(k.casefold() for k in keys) | (frozenset(KEYS) if builtin else frozenset())
        self.counts: Counter[str] = Counter()
        self.ids: dict[str, str] = {}
        """Identifiers rewritten (thread ids, namespaces, channels, task paths): the same id always
        becomes the same placeholder, so the export still reads as the same thread."""

    # -- values -------------------------------------------------------------------------------
    def text(self, s: str) -> str:
        if self.url is not None:
            s, n = self.url.subn(lambda m: m.group(1) + MARK + m.group(3), s)
            if n:
                self.counts[URL_PASSWORD[0]] += n
        for kind, rx in self.rules:
            s, n = rx.subn(MARK, s)
            if n:
                self.counts[kind] += n
        return s

    def blob(self, data: bytes) -> bytes:
        """Text inside bytes (a `bytes` value, an upload): redacted byte for byte (latin-1 keeps every
        byte as one character), so a secret in a binary value goes too."""
        text = data.decode("latin-1")
        redacted = self.text(text)
        return data if redacted == text else redacted.encode("latin-1", "replace")

    def ident(self, s: str) -> str:
        """An identifier (thread id, namespace, channel, task path, a mapping's key) with a secret
        in it becomes a placeholder, the same one wherever it appears; others stay as they are.
        Only the rewritten ones are remembered (a long-lived `statectl mcp` sees every key of
        every state: those are not kept)."""
        if s in self.ids:
            return self.ids[s]
        redacted = self.text(s)
        if redacted == s:
            return s
        taken = set(self.ids.values())
        base, n = redacted, 1
        while redacted in taken:
            n += 1
            redacted = f"{base}~{n}"
        self.ids[s] = redacted
        return redacted

    def is_key(self, k: object) -> bool:
        """Is `k` a key whose whole value is a secret (`--redact-key`, the built-in `KEYS`)? Its
        case aside: `Authorization` is `authorization`."""
        return isinstance(k, str) and k.casefold() in self.keys

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, (bytes, bytearray)):
            return self.blob(bytes(v))
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.value(x) for x in v)
        if isinstance(v, dict):
            out: dict[Any, Any] = {}
            for k, x in v.items():
                if self.is_key(k):
                    self.counts[f"value of --redact-key {k}"] += 1
                    out[k] = MARK
                    continue
                shown = self.ident(k) if isinstance(k, str) else k
                if shown != k:  # (never onto another key: `[REDACTED]` may be one already)
                    base, n = shown, 1
                    while shown in out or shown in v:
                        n += 1
                        shown = f"{base}~{n}"
                out[shown] = self.value(x)
            return out
        return v  # (an ormsgpack.Ext was redacted as it was read: see `msgpack`)

    # -- stored formats -------------------------------------------------------------------------
    def msgpack(self, data: bytes) -> bytes:
        def ext(code: int, payload: bytes) -> Any:  # LangGraph's ext payloads are msgpack too
            return ormsgpack.Ext(code, self.msgpack(payload))

        try:
            obj = ormsgpack.unpackb(data, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)
        except (ValueError, TypeError):
            raise Unredactable("a msgpack value does not decode: it cannot be redacted") from None
        return ormsgpack.packb(self.value(obj), option=ormsgpack.OPT_NON_STR_KEYS)

    def json(self, data: bytes) -> bytes:
        try:
            return orjson.dumps(self.value(orjson.loads(data)))
        except orjson.JSONDecodeError:
            raise Unredactable("a JSON value does not decode: it cannot be redacted") from None

    def row(self, type_: str | None, data: bytes | None, where: str, channel: str | None = None) -> bytes | None:
        """One stored (type, bytes) pair, rewritten in its own format; `channel`: the state key it
        holds (a write, a Postgres blob), whole under `--redact-key`."""
        if data is None or type_ in ("null", "empty"):
            return data
        if type_ in ("bytes", "bytearray"):
            return self.blob(bytes(data))
        if channel is not None and self.is_key(channel) and type_ in ("msgpack", "json"):
            self.counts[f"value of --redact-key {channel}"] += 1
            return ormsgpack.packb(MARK) if type_ == "msgpack" else orjson.dumps(MARK)
        if type_ is None:  # an untyped row (langgraph 0.0.x / 0.1.x)
            from statectl.codec.decode import sniff

            kind = sniff(bytes(data))
        else:
            kind = type_
        if kind == "msgpack":
            return self.msgpack(bytes(data))
        if kind == "json":
            return self.json(bytes(data))
        if kind == PG_TYPE:
            return self._pg(bytes(data), where)
        if kind == INMEM_TYPE:
            return self._inmem(bytes(data), where)
        if kind == SERVER_TYPE:
            return self.json(bytes(data))
        what = "an encrypted" if kind.endswith("+aes") else "a pickled" if "pickle" in kind else f"a {kind!r}"
        raise Unredactable(
            f"{where} holds {what} value, which statectl cannot rewrite: --redact refuses rather than pass it through",
            "export without --redact and check the file by hand",
        )

    def _b64row(self, type_: str | None, text: str | None, where: str, channel: str | None = None) -> str | None:
        data = unb64(text)
        return None if data is None else b64(self.row(type_, data, where, channel) or b"")

    def _pg(self, data: bytes, where: str) -> bytes:
        doc = orjson.loads(data)
        doc["checkpoint"] = self.value(doc["checkpoint"])  # inline primitive values
        doc["blobs"] = [[self.ident(ch), ver, t, self._b64row(t, b, where, ch)] for ch, ver, t, b in doc["blobs"]]
        return orjson.dumps(doc)

    def _inmem(self, data: bytes, where: str) -> bytes:
        doc = orjson.loads(data)
        if "server_record" in doc:
            doc["server_record"] = self.value(doc["server_record"])
            return orjson.dumps(doc)
        t, b = doc["checkpoint"]
        doc["checkpoint"] = [t, self._b64row(t, b, where)]
        doc["blobs"] = [[self.ident(ch), bt, self._b64row(bt, bb, where, ch)] for ch, bt, bb in doc["blobs"]]
        return orjson.dumps(doc)

    def summary(self) -> str:
        total = sum(self.counts.values())
        if not total:
            return "redacted nothing (no value matched)"
        parts = ", ".join(f"{n} {_plural(kind) if n > 1 else kind}" for kind, n in self.counts.most_common())
        return f"redacted {total} value{'s' * (total != 1)} ({parts})"


def _plural(kind: str) -> str:
    head, sep, rest = kind.partition(" of ")
    head = head + ("es" if head.endswith(("ss", "ch")) else "s")
    return head + sep + rest
