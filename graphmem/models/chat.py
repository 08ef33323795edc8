"""Chat histories (the LangChain message history's store DTOs)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# --- chat histories -------------------------------------------------------------------------------


@dataclass
class StoredMessage:
    """One chat message as stored: its type and LangChain's ``message_to_dict`` JSON."""

    type: str
    data_json: str


@dataclass
class SessionInfo:
    session_id: str
    messages: int
    created_at: datetime | None
    updated_at: datetime | None
