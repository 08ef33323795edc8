"""API keys: parsing ``GRAPHMEM_API_KEYS``, the caller they identify, and what logs may say of them."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from graphmem.config import Settings
from graphmem.errors import ConfigError
from graphmem.models import Scope
from graphmem.redaction import register_secret

MIN_KEY_CHARS = 16


def parse_api_keys(raw: str | None) -> dict[str, Scope | None]:
    """'k1,k2=alice/agent/run' -> {k1: None, k2: Scope(alice, agent, run)}. ConfigError when malformed."""
    keys: dict[str, Scope | None] = {}
    for n, entry in enumerate((raw or "").split(","), 1):
        entry = entry.strip()
        if not entry:
            continue
        key, sep, scope_text = entry.partition("=")
        key = key.strip()
        if len(key) < MIN_KEY_CHARS:
            raise ConfigError(
                f"GRAPHMEM_API_KEYS: key #{n} is shorter than {MIN_KEY_CHARS} characters "
                "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        if any(c.isspace() for c in key):
            raise ConfigError(f"GRAPHMEM_API_KEYS: key #{n} contains whitespace")
        bound: Scope | None = None
        if sep:
            try:
                bound = Scope.parse(scope_text.strip())
            except ValueError as exc:
                raise ConfigError(f"GRAPHMEM_API_KEYS: key #{n} has an invalid scope: {exc}") from None
        keys[key] = bound
    return keys


def key_fingerprint(key: str) -> str:
    """What logs may say about a key."""
    return "key:" + hashlib.sha256(key.encode()).hexdigest()[:8]


class Principal(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str  # key fingerprint, or "anonymous" when auth is disabled
    scope: Scope | None = None  # a bound key's scope


@dataclass(frozen=True)
class KeyRing:
    """The keys an app accepts (empty with auth disabled)."""

    disabled: bool
    keys: dict[str, Scope | None] = field(default_factory=dict)

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyRing:
        """ConfigError when no key is configured and auth is not explicitly disabled."""
        if settings.auth_disabled:
            return cls(disabled=True)
        keys = parse_api_keys(settings.api_keys.get_secret_value() if settings.api_keys else None)
        for key in keys:
            register_secret(key)
        if not keys:
            raise ConfigError(
                "the REST API needs API keys: set GRAPHMEM_API_KEYS='<key>' (comma-separated; "
                "'<key>=user/agent/run' binds a key to a scope), or GRAPHMEM_AUTH_DISABLED=true for local use. "
                "Make a key with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return cls(disabled=False, keys=keys)

    def find(self, given: str) -> tuple[str, Scope | None] | None:
        """The key matching ``given``, compared with every key in constant time."""
        found: tuple[str, Scope | None] | None = None
        for key, bound in self.keys.items():
            if hmac.compare_digest(key.encode(), given.encode()):
                found = (key, bound)
        return found
