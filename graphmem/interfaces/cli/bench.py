"""`graphmem bench`: import rate, search latency, index recall and disk use at growing scope sizes."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from graphmem.interfaces.cli.common import JsonOpt, console, print_json, progress_bar

app = typer.Typer(
    name="bench",
    invoke_without_command=True,
    help="Benchmarks: `graphmem bench [--sizes ...]` (search and bulk import), `graphmem bench ingest`.",
)


def _address(uri: str) -> str:
    """host:port of a Neo4j URI (never its credentials), to label a server in a side-by-side bench."""
    parts = urlsplit(uri)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def _default_data_dir(settings: Any, line: str) -> Path | None:
    """The managed server's data folder of a line in this GRAPHMEM_HOME (for bytes per note)."""
    from graphmem.local.neo4j_lines import LINES

    server_line = next((spec for name, spec in LINES.items() if name == line), None)
    candidate = settings.home / "neo4j" / server_line.instance / "data" if server_line else None
    return candidate if candidate is not None and candidate.is_dir() else None


@app.callback()
def bench_cmd(
    ctx: typer.Context,
    sizes: Annotated[
        str, typer.Option("--sizes", help="scope sizes, comma-separated (grown in one scope)")
    ] = "10000,100000",
    uris: Annotated[
        list[str] | None,
        typer.Option(
            "--uri",
            help="a Neo4j to bench (repeat for side by side, e.g. a 5.26 and a 2026 server); default NEO4J_URI",
        ),
    ] = None,
    tenant_notes: Annotated[
        int,
        typer.Option(
            "--tenant-notes", help="notes of the tenant case (100 tenants: one half, the searched one 1 %); 0: skip"
        ),
    ] = 100_000,
    tenants: Annotated[int, typer.Option("--tenants", help="tenants of the tenant case")] = 100,
    out: Annotated[
        Path, typer.Option("--out", help="output folder (bench.json, bench.md, latency_vs_size.png)")
    ] = Path("eval-out/bench"),
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir", help="Neo4j data folder, for bytes on disk per note (default: the managed server's)"
        ),
    ] = None,
    repetitions: Annotated[int, typer.Option("--repetitions", help="timed calls per measurement")] = 500,
    warmup: Annotated[int, typer.Option("--warmup", help="untimed calls before each measurement")] = 50,
    queries: Annotated[int, typer.Option("--queries", help="distinct query sentences")] = 100,
    brute_reps: Annotated[
        int, typer.Option("--brute-reps", help="timed brute-force Cypher scans (at most 60 s each size)")
    ] = 20,
    k: Annotated[int, typer.Option("-k", help="top-k")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="seed of the synthetic sentences")] = 42,
    links: Annotated[
        bool, typer.Option("--links/--no-links", help="add a FOLLOWS chain for the one-hop measurement")
    ] = True,
    keep: Annotated[bool, typer.Option("--keep", help="keep the bench scope afterwards")] = False,
    scope_user: Annotated[str, typer.Option("--scope-user", help="user id prefix of the bench scope")] = "bench",
    allow_1m: Annotated[
        bool, typer.Option("--allow-1m", help="allow sizes above 100,000 (slow: embedding alone takes long)")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Synthetic notes in bulk, then search latency p50/p95 vs exact NumPy and a brute-force Cypher scan;
    then the tenant case. With several --uri, the same run on each server, side by side."""
    if ctx.invoked_subcommand is not None:  # `graphmem bench ingest ...`: the options here are not used
        return
    from graphmem.config import get_settings
    from graphmem.embeddings import make_embedder
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.bench import BenchConfig, ReusedEmbeddings, run_bench, run_tenant_bench
    from graphmem.evaluation.report import write_outputs
    from graphmem.service import AsyncMemoryService

    try:
        size_list = sorted({int(x.replace("_", "")) for x in sizes.split(",") if x.strip()})
    except ValueError:
        raise InvalidInputError("--sizes must be integers, comma-separated") from None
    if not size_list or size_list[0] < k:
        raise InvalidInputError(f"--sizes must be at least k ({k})")
    if max(size_list[-1], tenant_notes) > 100_000 and not allow_1m:
        raise InvalidInputError("sizes (and --tenant-notes) above 100,000 need --allow-1m")
    if max(size_list[-1], tenant_notes) > 1_000_000:
        raise InvalidInputError("sizes above 1,000,000 are not supported")
    if tenant_notes and (tenants < 3 or tenant_notes < 2 * tenants):
        raise InvalidInputError("the tenant case needs --tenants >= 3 and --tenant-notes >= 2 x --tenants")
    if repetitions < 1 or queries < 1 or brute_reps < 1:
        raise InvalidInputError("--repetitions, --queries and --brute-reps must be at least 1")
    base = get_settings()
    targets = list(dict.fromkeys(uris or [base.neo4j_uri]))
    cfg = BenchConfig(
        sizes=size_list,
        queries=queries,
        repetitions=repetitions,
        warmup=warmup,
        brute_force_repetitions=brute_reps,
        k=k,
        seed=seed,
        links=links,
        keep=keep,
        scope_user=scope_user,
        data_dir=data_dir,
        tenant_notes=tenant_notes,
        tenants=tenants,
    )
    embedder = ReusedEmbeddings(make_embedder(base))  # every server gets the same vectors

    async def one(uri: str) -> dict[str, Any]:
        settings = base.model_copy(update={"neo4j_uri": uri})
        say = lambda m: console.print(f"[dim]{uri}: {m}[/]")  # noqa: E731
        async with await AsyncMemoryService.create(settings, embedder=embedder) as svc:
            line = (await svc.health())["neo4j"]["line"]
            run_cfg = replace(cfg, data_dir=cfg.data_dir or _default_data_dir(settings, line))
            result = await run_bench(svc, run_cfg, report=say)
            if len(targets) > 1:  # tells apart two servers of one version (e.g. two configurations)
                result["server"]["address"] = _address(uri)
            if not tenant_notes:
                return result
            plain = settings.model_copy(update={"exact_scan_max_notes": 0})
            if line == "5.26":  # what the exact scan of small scopes saves: the over-fetch alone, timed beside it
                async with await AsyncMemoryService.create(plain, embedder=embedder, bootstrap=False) as over:
                    result["tenants"] = await run_tenant_bench(svc, run_cfg, over_fetch_only=over, report=say)
            else:
                result["tenants"] = await run_tenant_bench(svc, run_cfg, report=say)
            return result

    async def main() -> dict[str, Any]:
        runs = [await one(uri) for uri in targets]
        if len(runs) == 1:
            return runs[0]
        return {"kind": "bench_lines", "runs": runs}

    result = asyncio.run(main())
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / f"{result['kind']}.md").read_text(encoding="utf-8"))
    for kind, path in written.items():
        console.print(f"  {kind}: {path}")


@app.command("ingest")
def ingest_cmd(
    levels: Annotated[str, typer.Option("--levels", help="notes in flight per level, comma-separated")] = "1,4,16,64",
    notes: Annotated[
        int, typer.Option("--notes", min=1, help="notes per concurrent level (at least 4 x the level)")
    ] = 128,
    sequential_notes: Annotated[
        int, typer.Option("--sequential-notes", min=1, help="notes of the sequential level and of level 1")
    ] = 24,
    latency: Annotated[float, typer.Option("--latency", min=0.0, help="seconds per stub LLM call")] = 0.5,
    out: Annotated[
        Path, typer.Option("--out", help="output folder (ingest_bench.json, .md, ingest_notes_per_s.png)")
    ] = Path("eval-out/ingest-bench"),
    local: Annotated[
        bool, typer.Option("--local", help="also run the local model: seconds and tokens per note vs the floor (slow)")
    ] = False,
    local_notes: Annotated[int, typer.Option("--local-notes", min=1, help="notes per local level")] = 16,
    local_concurrency: Annotated[
        int, typer.Option("--local-concurrency", min=1, help="notes in flight of the batched local level")
    ] = 4,
    rates: Annotated[
        str | None,
        typer.Option(
            "--rates",
            help="pp,tg tokens/s for the floor, or a JSON file with them (`graphmem llm bench`'s llm_bench.json); "
            "default: measured on the local server",
        ),
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the synthetic notes")] = 42,
    keep: Annotated[bool, typer.Option("--keep", help="keep the bench scopes afterwards")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Notes/s of the A-MEM write path against a stub LLM (fixed latency per call), one add after
    another vs the concurrent ingest at each level; lost notes, duplicates and the order rule checked."""
    from graphmem.config import get_settings
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.ingest_bench import IngestBenchConfig, read_rates, run_ingest_bench
    from graphmem.evaluation.report import write_outputs
    from graphmem.local import chat_model

    try:
        level_list = [int(x) for x in levels.split(",") if x.strip()]
    except ValueError:
        raise InvalidInputError("--levels must be integers, comma-separated") from None
    if not level_list or min(level_list) < 1 or max(level_list) > 1024:
        raise InvalidInputError("--levels must be between 1 and 1024")
    pp_tg: tuple[float, float] | None = None
    if rates:
        try:
            parts = [float(x) for x in rates.split(",")]
            pp_tg = (parts[0], parts[1]) if len(parts) == 2 else None
        except ValueError:
            pp_tg = read_rates(rates) if Path(rates).is_file() else None
        if pp_tg is None or min(pp_tg) <= 0:
            raise InvalidInputError("--rates must be 'pp,tg' (tokens/s, positive) or a JSON file with them")
    cfg = IngestBenchConfig(
        levels=level_list,
        notes=notes,
        sequential_notes=sequential_notes,
        latency=latency,
        seed=seed,
        keep=keep,
        local=local,
        local_notes=local_notes,
        local_concurrency=local_concurrency,
        rates=pp_tg,
    )
    with progress_bar(transient=True) as bar:
        task = bar.add_task("ingest bench", total=None)
        result = run_ingest_bench(
            get_settings(), cfg, local_model=chat_model, report=lambda m: bar.update(task, description=m)
        )
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / "ingest_bench.md").read_text(encoding="utf-8"), markup=False, highlight=False)
    for kind, path in written.items():
        console.print(f"  {kind}: {path}")
