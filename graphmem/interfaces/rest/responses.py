"""Big JSON answers without stalling the server (issue 16: ten clients pulling 8.5 MB searches held
``/health`` for seconds). A list answer is written by pydantic-core in one pass per item, with a
yield to the event loop every few items, instead of FastAPI's validate-then-encode of the whole
answer at once; the route's ``response_model`` still documents the shape."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

from fastapi.responses import Response
from pydantic import BaseModel

_SLICE = 16  # items serialised between two yields to the event loop (a few ms for the largest notes)
NOTE_EXCLUDE = {"embedding"}  # a client never gets embeddings
HIT_EXCLUDE = {"note": NOTE_EXCLUDE}


async def json_list(key: str, items: Sequence[BaseModel], *, exclude: Any = None, **fields: Any) -> Response:
    """``{key: [items...], **fields}`` as an application/json response; ``exclude`` applies to each
    item (pydantic's include/exclude syntax)."""
    parts: list[bytes] = []
    for i, item in enumerate(items):
        if i and not i % _SLICE:
            await asyncio.sleep(0)
        parts.append(item.__pydantic_serializer__.to_json(item, exclude=exclude))
    head = json.dumps(key).encode() + b":[" + b",".join(parts) + b"]"
    tail = b"".join(b"," + json.dumps(k).encode() + b":" + json.dumps(v).encode() for k, v in fields.items())
    return Response(content=b"{" + head + tail + b"}", media_type="application/json")
