"""`graphmem migrate-index`: rebuild a 5.26-style vector index on a Neo4j 2026 server."""

from __future__ import annotations

import asyncio
from typing import Any

import typer

from graphmem.interfaces.cli.common import JsonOpt, console, print_json

app = typer.Typer()


@app.command("migrate-index")
def migrate_index(as_json: JsonOpt = False) -> None:
    """On a 2026 server: drop the notes' vector index if it lacks the scope properties and rebuild it
    with WITH [n.user_id, n.agent_id, n.run_id], so searches filter by scope inside the index.

    Notes and embeddings stay; vector search is unavailable until the rebuild is ONLINE (about 40 s
    per 100,000 notes on 2 cores). Nothing to do on a 5.26 server or an index that has them.
    """
    from graphmem.config import get_settings
    from graphmem.service import AsyncMemoryService

    async def main() -> dict[str, Any]:
        async with await AsyncMemoryService.create(get_settings(), migrate_index=True) as svc:
            return await svc.health()

    health = asyncio.run(main())
    if as_json:
        print_json(health)
        return
    server = health["neo4j"]
    console.print(
        f"vector index ready for the {server['line']} line (Neo4j {server['version']}, default language "
        f"{server['language']}); {health['notes']} notes"
    )
