"""Who may call ``rewardzoo serve``: bearer tokens, each with a client name and a scope, kept as salted hashes.

    rewardzoo serve token trainer --scope learn --tokens tokens.txt    # prints a new token once, appends its hash
    rewardzoo serve RECIPE --tokens tokens.txt --host 0.0.0.0          # requests carry Authorization: Bearer <token>

The tokens file has one client per line, ``name scope hash`` (``#`` starts a comment):

    trainer   learn              sha256:<salt hex>:<HMAC-SHA256(salt, token) hex>
    eval      score              sha256:...

A token is 32 random bytes (``secrets.token_urlsafe``), so a salted SHA-256 needs no slow key stretching: no
dictionary holds it. The file never holds a token, and the service never logs one. A request's token is
compared with every line's hash by :func:`hmac.compare_digest`, all lines every time, so the time taken
says nothing about which line (or how much of one) matched.

Scopes, from least to most (:data:`SCOPES`):

    score              rewards only: the judge never learns from this client's rows
    learn              the judge learns from its rows, whose references must be the service's own
                       (the task's data, or ``--references``): a row whose reference differs is refused (403)
    learn+references   also trains the judge on references the client supplies (each one audited)
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

from rewardzoo.core.config import ConfigError

SCOPES = ("score", "learn", "learn+references")
"""The scopes a token may have, each allowing what the one before it does and more."""

HASH_SCHEME = "sha256"


@dataclass(frozen=True)
class Client:
    """A caller the service knows: its name (in the audit log) and its scope."""

    name: str
    scope: str

    @property
    def may_learn(self) -> bool:
        """Whether the judge may learn from this client's rows."""
        return self.scope != "score"

    @property
    def may_teach_references(self) -> bool:
        """Whether the judge may learn from references this client supplies."""
        return self.scope == "learn+references"


ANONYMOUS = Client("anonymous", "learn")
"""The caller of a service started without ``--tokens`` (loopback only): it may learn, on the service's references."""


def token_hash(token: str, salt: bytes) -> str:
    """The line's hash of ``token``: ``sha256:<salt hex>:<HMAC-SHA256(salt, token) hex>``."""
    digest = hmac.new(salt, token.encode(), hashlib.sha256).hexdigest()
    return f"{HASH_SCHEME}:{salt.hex()}:{digest}"


def _matches(token: str, line_hash: str) -> bool:
    """Whether ``token`` is the one ``line_hash`` was made from (constant time in the digest)."""
    _, salt, _ = line_hash.split(":")
    return hmac.compare_digest(token_hash(token, bytes.fromhex(salt)), line_hash)


class Tokens:
    """The clients of a tokens file; :meth:`client` finds a bearer token's client."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self.entries = read_tokens(self.path)

    def client(self, token: str | None) -> Client | None:
        """The client whose hash ``token`` matches, or None (every line is compared, whichever matches)."""
        if not token:
            return None
        found = None
        for client, line_hash in self.entries:
            if _matches(token, line_hash) and found is None:
                found = client
        return found


def read_tokens(path: Path) -> list[tuple[Client, str]]:
    """The (client, hash) lines of a tokens file; a ConfigError naming the line when one is malformed."""
    if not path.is_file():
        raise ConfigError(
            f"--tokens {path}: no such file; make one with `rewardzoo serve token NAME --scope learn --tokens {path}`"
        )
    entries, names = [], set()
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 3 or parts[1] not in SCOPES or not _well_formed(parts[2]):
            raise ConfigError(
                f"{path}:{number}: expected `name scope {HASH_SCHEME}:<salt>:<digest>` with a scope in "
                f"{', '.join(SCOPES)}; make lines with `rewardzoo serve token NAME --scope SCOPE --tokens {path}`"
            )
        if parts[0] in names:
            raise ConfigError(f"{path}:{number}: client {parts[0]!r} is named twice; give each client one line")
        names.add(parts[0])
        entries.append((Client(parts[0], parts[1]), parts[2]))
    if not entries:
        raise ConfigError(f"--tokens {path} lists no client; add one with `rewardzoo serve token NAME --tokens {path}`")
    return entries


def _well_formed(line_hash: str) -> bool:
    parts = line_hash.split(":")
    if len(parts) != 3 or parts[0] != HASH_SCHEME:
        return False
    try:
        return len(bytes.fromhex(parts[1])) >= 16 and len(bytes.fromhex(parts[2])) == 32
    except ValueError:
        return False


def new_token(path: str | Path, name: str, scope: str) -> str:
    """A new random token for client ``name`` with ``scope``; its hash is appended to ``path`` (created
    when missing, readable by its owner only). The token itself is returned once and stored nowhere."""
    if scope not in SCOPES:
        raise ConfigError(f"--scope must be one of {', '.join(SCOPES)}; got {scope!r}")
    if not name or any(c.isspace() for c in name) or "#" in name:
        raise ConfigError(f"a client name is one word without '#'; got {name!r}")
    path = Path(path).expanduser()
    if path.exists() and any(client.name == name for client, _ in read_tokens(path)):
        raise ConfigError(f"{path} already has a client named {name!r}; pick another name or delete its line")
    token = "rz_" + secrets.token_urlsafe(32)
    line = f"{name} {scope} {token_hash(token, secrets.token_bytes(16))}\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    with open(path, "a") as f:
        f.write(line)
    return token


def presented_token(header: str | None) -> str | None:
    """The token of an ``Authorization`` header: ``Bearer <token>``, or HTTP Basic with the token as the
    password (what a client that cannot set headers sends for a URL ``http://NAME:TOKEN@host/...``, as
    OpenRLHF's aiohttp client does); None otherwise."""
    kind, _, value = (header or "").partition(" ")
    value = value.strip()
    if kind.lower() == "bearer":
        return value or None
    if kind.lower() == "basic":
        try:
            _, _, password = base64.b64decode(value, validate=True).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None
        return password or None
    return None


LOOPBACK = ("127.", "::1", "localhost")


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    return host.startswith(LOOPBACK[0]) or host in LOOPBACK[1:]
