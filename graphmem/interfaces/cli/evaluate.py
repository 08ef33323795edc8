"""`graphmem eval locomo` (QA with the configured LLM), `graphmem eval retrieval` and `graphmem eval links`
(LLM-free)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from graphmem.interfaces.cli.common import JsonOpt, console, print_json
from graphmem.models import SearchMode

app = typer.Typer(
    name="eval", help="Evaluate graphmem on LoCoMo (QA with an LLM, or retrieval without one).", no_args_is_help=True
)

DataOpt = Annotated[Path, typer.Option("--data", help="LoCoMo JSON file (e.g. locomo10.json); never copied")]
ConvOpt = Annotated[
    str | None,
    typer.Option("--conversations", "-c", help="sample ids or 1-based positions, comma-separated (default all)"),
]
SessOpt = Annotated[
    str | None, typer.Option("--sessions", "-s", help="session numbers: '1', '1-3', '1,4' (default all)")
]
MaxQOpt = Annotated[int | None, typer.Option("--max-questions", help="at most this many questions per conversation")]


LOG_EVERY_S = 60.0  # a line per bar this often when the output is not a terminal (a background run's log)


def eta_line(label: str, done: int, total: int, elapsed: float, done_at_start: int = 0) -> str:
    """``label: done/total, rate/s, ETA h:mm:ss`` for a log; the rate counts only what this run did
    (what a resumed run found done costs nothing)."""
    rate = (done - done_at_start) / elapsed if elapsed > 0 else 0.0
    left = total - done
    if left <= 0:
        eta = "done"
    elif rate > 0:
        secs = int(left / rate)
        eta = f"ETA {secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"
    else:
        eta = "ETA -"
    return f"{label}: {done}/{total}, {rate:.3f}/s, {eta}"


@contextmanager
def progress_bars() -> Iterator[Callable[[str, int, int], None]]:
    """A rich progress display; yields `update(label, done, total)`, one bar per label. When the output is
    not a terminal (a niced background run writing a log), a plain line per bar every minute instead."""
    import time

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    ) as bars:
        tasks: dict[str, Any] = {}
        first: dict[str, tuple[float, int]] = {}
        logged: dict[str, float] = {}

        def update(label: str, done: int, total: int) -> None:
            if label not in tasks:
                tasks[label] = bars.add_task(label, total=total)
            bars.update(tasks[label], completed=done, total=total)
            if console.is_terminal:
                return
            now = time.monotonic()
            start, done_at_start = first.setdefault(label, (now, done))
            if done >= total or now - logged.get(label, start) >= LOG_EVERY_S:
                logged[label] = now
                console.print(eta_line(label, done, total, now - start, done_at_start), highlight=False)

        yield update


def _settings(**overrides: Any) -> Any:
    from graphmem.config import get_settings

    s = get_settings()
    updates = {k: v for k, v in overrides.items() if v is not None}
    return s.model_copy(update=updates) if updates else s


def _conversations(data: Path, conversations: str | None) -> list[Any]:
    from graphmem.evaluation.locomo import load_locomo, select

    ids = [x.strip() for x in conversations.split(",") if x.strip()] if conversations else None
    return select(load_locomo(data), ids)


def _print_outputs(written: dict[str, Path]) -> None:
    for kind, path in written.items():
        console.print(f"  {kind}: {path}")


FULL_CONTEXT_CTX = 32768  # tokens per slot of the full-context server (Qwen2.5-Coder-1.5B accepts 32K)
FULL_CONTEXT_SERVER = "server-full-context"  # its pid record and log under <home>/llm/


def full_context_settings(settings: Any, port: int | None, ctx: int) -> Any:
    """Settings of the dedicated full-context model server: one slot holding ``ctx`` tokens on its own
    port (the main server's slots hold GRAPHMEM_LOCAL_LLM_CTX, 4,096 by default), and a client that
    waits as long as the server makes progress on a long prompt."""
    return settings.model_copy(
        update={
            "local_llm_port": port or settings.local_llm_port + 1,
            "local_llm_ctx": ctx,
            "local_llm_parallel": 1,
            "llm_timeout": max(settings.llm_timeout, 1800.0),
        }
    )


def repeatable_answers(settings: Any) -> Any:
    """Settings of the local model for answers that repeat: every prompt processed whole."""
    return settings.model_copy(update={"local_llm_cache_prompt": False})


def served_slot_context(base_url: str, timeout: float = 5.0) -> int | None:
    """Tokens one slot of the llama-server at ``base_url`` holds (``/props``), None when it does not say."""
    import json
    import urllib.request

    root = base_url.rstrip("/").removesuffix("/v1")
    try:
        with urllib.request.urlopen(f"{root}/props", timeout=timeout) as response:  # loopback only
            props = json.loads(response.read())
        value = props.get("default_generation_settings", {}).get("n_ctx", props.get("n_ctx"))
        return int(value) if value else None
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def _full_context_model(settings: Any) -> tuple[Any, int | None, Callable[[], None]]:
    """Start (or reuse) the dedicated full-context server; its chat model, the context its slot holds
    (a server already running on the port may hold less than asked) and what to call when done: a
    server this run started is stopped (2-3 GB and a 32K cache are not left behind), one it found
    running is left alone. Blocking."""
    from graphmem.llm import make_chat_model
    from graphmem.local.llm_server import LocalLLM

    local = LocalLLM(settings, show_progress=False, name=FULL_CONTEXT_SERVER)
    started = local.start(allow_build=False)
    model = make_chat_model(settings, base_url=started.base_url, model=local.model_name, local_server=local.server)

    def done() -> None:
        if not started.reused:
            local.stop()

    return model, served_slot_context(started.base_url), done


def _fit_to_server(cfg: Any, settings: Any, asked: int, served: int | None) -> None:
    """Cut to what the server holds when it holds less than asked, and say so."""
    from graphmem.evaluation.full_context import full_context_limit

    if served is not None and served < asked:
        console.print(
            f"[yellow]The full-context server on port {settings.local_llm_port} holds {served:,} tokens per slot, "
            f"not {asked:,} (a server started earlier with other settings; stop it with `graphmem llm stop --name "
            f"{FULL_CONTEXT_SERVER}`). Conversations are cut to fit it; the report says what was cut.[/]"
        )
        cfg.full_context_limit = full_context_limit(served, settings.llm_max_tokens)


def _run_qa(
    cfg: Any,
    convs: list[Any],
    settings: Any,
    out: Path,
    *,
    fc_port: int | None,
    fc_ctx: int,
    fc_shared: bool,
    as_json: bool,
) -> None:
    """Run the QA harness (memory, budgets, baselines) with the local model started as needed."""
    from graphmem.evaluation.full_context import full_context_limit
    from graphmem.evaluation.qa import pending_answers, run_qa_eval
    from graphmem.evaluation.report import write_outputs
    from graphmem.local import chat_model
    from graphmem.service import AsyncMemoryService, OnFirstUse

    wants_fc = "full-context" in cfg.systems and not cfg.ingest_only
    local = settings.resolved_llm_provider == "local"
    fc_settings = None
    if wants_fc and local:
        if fc_shared:  # the main server's slots: the limit is theirs
            cfg.full_context_limit = full_context_limit(settings.local_llm_ctx, settings.llm_max_tokens)
        else:
            fc_settings = full_context_settings(settings, fc_port, fc_ctx)
            cfg.full_context_limit = full_context_limit(fc_ctx, settings.llm_max_tokens)
    elif wants_fc and fc_ctx != FULL_CONTEXT_CTX:  # a remote model: cut only when told its window
        cfg.full_context_limit = full_context_limit(fc_ctx, settings.llm_max_tokens)

    answers = cfg.answers or out / "answers.jsonl"
    if fc_settings is not None and (
        cfg.score_only or not pending_answers(settings, convs, cfg, answers)["full-context"]
    ):
        # every full-context answer is in the answers file: scored again, no server started
        cfg.full_context_settings, fc_settings = fc_settings, None
    only_fc = fc_settings is not None and set(cfg.systems) == {"full-context"} and not cfg.judge

    async def main(update: Callable[[str, int, int], None]) -> dict[str, Any]:
        if only_fc:  # the main model server is not needed
            fc_model, served, fc_done = await asyncio.to_thread(_full_context_model, fc_settings)
            try:
                _fit_to_server(cfg, fc_settings, fc_ctx, served)
                async with await AsyncMemoryService.create(fc_settings, chat_model=fc_model) as fc:
                    return await run_qa_eval(fc, convs, cfg, out, progress=update, full_context_svc=fc)
            finally:
                await asyncio.to_thread(fc_done)
        # The local LLM starts off the event loop when a call first needs it: a run whose ingest and
        # answers are all stored only scores them again and starts no server.
        model = OnFirstUse(lambda: asyncio.to_thread(chat_model, settings))
        # Answers without the prompt cache: a cached prefix rounds otherwise than a recomputed one and
        # flipped 2 of 11 greedy answers between two runs of the same prompts (docs/evaluation.md).
        # Full context on the main server needs its cache (the conversation is the prompt's prefix).
        answering = None
        if local:
            cfg.answer_prompt_cache = wants_fc and fc_shared
            if not cfg.answer_prompt_cache:
                answering = OnFirstUse(lambda: asyncio.to_thread(chat_model, repeatable_answers(settings)))
        async with await AsyncMemoryService.create(settings, chat_model=model, answer_model=answering) as svc:
            if fc_settings is None:
                return await run_qa_eval(svc, convs, cfg, out, progress=update)
            fc_model, served, fc_done = await asyncio.to_thread(_full_context_model, fc_settings)
            try:
                _fit_to_server(cfg, fc_settings, fc_ctx, served)
                async with await AsyncMemoryService.create(
                    fc_settings, chat_model=fc_model, embedder=svc.embedder
                ) as fc:
                    return await run_qa_eval(svc, convs, cfg, out, progress=update, full_context_svc=fc)
            finally:
                await asyncio.to_thread(fc_done)

    with progress_bars() as update:
        result = asyncio.run(main(update))
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / "qa.md").read_text(encoding="utf-8"))
    _print_outputs(written)


BaselineOpt = Annotated[
    str,
    typer.Option(
        "--baseline",
        help="comma-separated: full-context, rag, memory-no-llm, memory-with-context, memory-no-context, "
        "memory-full, memory-no-evolution, memory-no-links, memory-neither, memory-no-enrichment, "
        "memory-no-supersession (the last six answer from the arm scopes `eval links` builds) or none",
    ),
]
BaselineOnlyOpt = Annotated[
    bool, typer.Option("--baseline-only", help="only the baselines and budgets (no `memory` system)")
]
SampleOpt = Annotated[
    int | None,
    typer.Option("--sample", min=1, help="a fixed sample of N questions, stratified by category, seeded by --seed"),
]
BudgetsOpt = Annotated[
    str | None,
    typer.Option("--budgets", help="context budgets for the budget curve, e.g. 500,1000,2000,4000 (memory@B)"),
]
FcPortOpt = Annotated[
    int | None,
    typer.Option("--fc-port", help="port of the dedicated full-context model server (default: the LLM port + 1)"),
]
FcCtxOpt = Annotated[
    int,
    typer.Option("--fc-ctx", min=1024, max=32768, help="tokens the full-context server's one slot holds"),
]
FcSharedOpt = Annotated[
    bool,
    typer.Option("--fc-shared-server", help="answer full-context on the main model server (its slot size limits it)"),
]
RawTagOpt = Annotated[
    str | None,
    typer.Option("--raw-tag", help="scope tag of the raw turns of rag / memory-no-llm (default raw-<text>-follows)"),
]
RagKOpt = Annotated[int, typer.Option("--rag-k", min=1, max=100, help="dense candidates of the rag arm")]
AnswersOpt = Annotated[
    Path | None,
    typer.Option(
        "--answers",
        help="answers file to append to and resume from (default <out>/answers.jsonl); reports may share one",
    ),
]
RecheckOpt = Annotated[
    bool,
    typer.Option(
        "--recheck-contexts",
        help="reuse a stored memory answer only while ask still gives it the same notes (the database's other "
        "scopes move full-text scores); ask the others again",
    ),
]
ConcurrencyOpt = Annotated[
    int | None,
    typer.Option(
        "--concurrency",
        "-j",
        min=1,
        max=1024,
        help="notes in flight while ingesting, over all conversations (default GRAPHMEM_INGEST_CONCURRENCY)",
    ),
]
ModeOpt = Annotated[SearchMode | None, typer.Option("--mode", help="search mode (default: setting)")]
KOpt = Annotated[int | None, typer.Option("-k", help="notes retrieved per question (default: setting)")]
TokenBudgetOpt = Annotated[int | None, typer.Option("--token-budget", help="context token budget of ask")]
TagOpt = Annotated[
    str | None, typer.Option("--tag", help="scope tag (default: derived from model and ablation settings)")
]
IngestOnlyOpt = Annotated[bool, typer.Option("--ingest-only", help="store the conversations, answer nothing")]
ScoreOnlyOpt = Annotated[
    bool,
    typer.Option(
        "--score-only",
        help="score the answers already in the answers file (store and ask nothing, start no model): every "
        "system on the questions all of them answered; the report says what is left to ask",
    ),
]
SeedOpt = Annotated[
    int, typer.Option("--seed", help="seed of the sample, the bootstrap and LoCoMo's category-5 option order")
]


# The options `eval locomo`, `longmemeval` and `beam` share, passed to QAConfig as they are
_SHARED_QA_OPTIONS = (
    "tag", "mode", "k", "token_budget", "judge", "seed", "ingest_only", "score_only", "concurrency", "sample",
    "answers", "raw_tag", "rag_k", "recheck_contexts",
)  # fmt: skip


def _qa_config(options: dict[str, Any], **fields: Any) -> Any:
    """The QA run's configuration: the systems from a command's --baseline, --budgets and
    --baseline-only, its shared options (``options``: the command's parameters) and the dataset's
    own ``fields`` (one place for `eval locomo`, `longmemeval` and `beam`)."""
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.qa_systems import QAConfig, parse_baselines, parse_budgets, systems_for

    fields |= {name: options[name] for name in _SHARED_QA_OPTIONS}
    if fields.get("ingest_only") and fields.get("score_only"):
        raise InvalidInputError("--ingest-only stores and answers nothing, --score-only stores nothing: choose one")
    if fields.get("recheck_contexts") and fields.get("score_only"):
        raise InvalidInputError("--recheck-contexts may ask again, --score-only asks nothing: choose one")
    if fields.get("judge") and fields.get("score_only"):  # the judge calls the model and rewrites the answers file
        raise InvalidInputError("--judge asks the model, --score-only asks nothing: judge in a run of its own")
    systems = systems_for(
        parse_baselines(options["baseline"]), parse_budgets(options["budgets"]), baseline_only=options["baseline_only"]
    )
    return QAConfig(systems=systems, **fields)


def _dataset_fields(prefix: str, names: Any) -> dict[str, Any]:
    """What a dataset other than LoCoMo sets alike: its scope prefix and category names, no paper
    reference rows, and abstention answered openly (an explanation, not a distractor to offer)."""
    return {"scope_prefix": prefix, "reference": False, "category_names": dict(names), "cat5_prompt": "open"}


@app.command("locomo")
def locomo_cmd(
    data: DataOpt,
    out: Annotated[Path, typer.Option("--out", help="output folder (answers.jsonl, qa.json, qa.md, plot)")] = Path(
        "eval-out/locomo"
    ),
    conversations: ConvOpt = None,
    sessions: SessOpt = None,
    max_questions: MaxQOpt = None,
    mode: ModeOpt = None,
    k: KOpt = None,
    baseline: BaselineOpt = "none",
    baseline_only: BaselineOnlyOpt = False,
    sample: SampleOpt = None,
    budgets: BudgetsOpt = None,
    categories: Annotated[str, typer.Option("--categories", help="category ids, comma-separated")] = "1,2,3,4,5",
    cat5_prompt: Annotated[
        str, typer.Option("--cat5-prompt", help="options (A-MEM/LoCoMo: shows the distractor) | open")
    ] = "options",
    judge: Annotated[
        bool, typer.Option("--judge", help="also grade answers of categories 1-4 with the LLM judge")
    ] = False,
    temperature: Annotated[
        float | None, typer.Option("--temperature", help="LLM temperature (default: setting, 0)")
    ] = None,
    tag: TagOpt = None,
    raw_tag: RawTagOpt = None,
    rag_k: RagKOpt = 50,
    token_budget: TokenBudgetOpt = None,
    ingest_only: IngestOnlyOpt = False,
    score_only: ScoreOnlyOpt = False,
    answers: AnswersOpt = None,
    recheck_contexts: RecheckOpt = False,
    concurrency: ConcurrencyOpt = None,
    fc_port: FcPortOpt = None,
    fc_ctx: FcCtxOpt = FULL_CONTEXT_CTX,
    fc_shared: FcSharedOpt = False,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """QA on LoCoMo: full A-MEM ingest of each conversation (concurrent, in turn order, resumable), answers
    via ask, A-MEM and LoCoMo metrics; baselines (full context, plain RAG, graphmem without the LLM at
    write) and the budget curve in the same harness, with paired bootstrap intervals. Resumable: rerun
    the same command and only what is missing is stored or asked."""
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.locomo import parse_sessions

    if cat5_prompt not in ("options", "open"):
        raise InvalidInputError("--cat5-prompt must be options or open")
    cfg = _qa_config(
        locals(),
        sessions=parse_sessions(sessions),
        categories=tuple(int(c) for c in categories.split(",") if c.strip()),
        max_questions=max_questions,
        cat5_prompt=cat5_prompt,
    )
    settings = _settings(llm_temperature=temperature)
    convs = _conversations(data, conversations)
    _run_qa(cfg, convs, settings, out, fc_port=fc_port, fc_ctx=fc_ctx, fc_shared=fc_shared, as_json=as_json)


@app.command("longmemeval")
def longmemeval_cmd(
    data: Annotated[
        Path, typer.Option("--data", help="LongMemEval JSON file (longmemeval_s.json, _m, _oracle); never copied")
    ],
    out: Annotated[Path, typer.Option("--out", help="output folder (answers.jsonl, qa.json, qa.md, plot)")] = Path(
        "eval-out/longmemeval"
    ),
    questions: Annotated[
        str | None, typer.Option("--questions", "-q", help="question ids or 1-based positions, comma-separated")
    ] = None,
    baseline: BaselineOpt = "none",
    baseline_only: BaselineOnlyOpt = False,
    sample: SampleOpt = None,
    budgets: BudgetsOpt = None,
    mode: ModeOpt = None,
    k: KOpt = None,
    token_budget: TokenBudgetOpt = None,
    judge: Annotated[bool, typer.Option("--judge", help="also grade answers with the LLM judge")] = False,
    tag: TagOpt = None,
    raw_tag: RawTagOpt = None,
    rag_k: RagKOpt = 50,
    ingest_only: IngestOnlyOpt = False,
    score_only: ScoreOnlyOpt = False,
    answers: AnswersOpt = None,
    recheck_contexts: RecheckOpt = False,
    concurrency: ConcurrencyOpt = None,
    fc_port: FcPortOpt = None,
    fc_ctx: FcCtxOpt = FULL_CONTEXT_CTX,
    fc_shared: FcSharedOpt = False,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """QA on LongMemEval-format data: each question's history (sessions with dates) into its own scope,
    the question asked on its question date; abstention questions (ids ending in _abs) as category 5.
    Same systems, metrics and resumability as `eval locomo`."""
    from graphmem.evaluation.locomo import select
    from graphmem.evaluation.longmemeval import CATEGORY_NAMES, load_longmemeval

    ids = [x.strip() for x in questions.split(",") if x.strip()] if questions else None
    convs = select(load_longmemeval(data), ids)
    cfg = _qa_config(locals(), **_dataset_fields("lme", CATEGORY_NAMES))
    _run_qa(cfg, convs, _settings(), out, fc_port=fc_port, fc_ctx=fc_ctx, fc_shared=fc_shared, as_json=as_json)


@app.command("beam")
def beam_cmd(
    data: Annotated[
        Path,
        typer.Option("--data", help="a BEAM chat folder (chats/100K/1) or a folder of them (chats/100K); never copied"),
    ],
    out: Annotated[Path, typer.Option("--out", help="output folder (answers.jsonl, qa.json, qa.md, plot)")] = Path(
        "eval-out/beam"
    ),
    roles: Annotated[
        str, typer.Option("--roles", help="messages stored as notes: user, assistant or both, comma-separated")
    ] = "user,assistant",
    baseline: BaselineOpt = "none",
    baseline_only: BaselineOnlyOpt = False,
    sample: SampleOpt = None,
    budgets: BudgetsOpt = None,
    mode: ModeOpt = None,
    k: KOpt = None,
    token_budget: TokenBudgetOpt = None,
    judge: Annotated[bool, typer.Option("--judge", help="also grade answers with the LLM judge")] = False,
    tag: TagOpt = None,
    raw_tag: RawTagOpt = None,
    rag_k: RagKOpt = 50,
    ingest_only: IngestOnlyOpt = False,
    score_only: ScoreOnlyOpt = False,
    answers: AnswersOpt = None,
    recheck_contexts: RecheckOpt = False,
    concurrency: ConcurrencyOpt = None,
    fc_port: FcPortOpt = None,
    fc_ctx: FcCtxOpt = FULL_CONTEXT_CTX,
    fc_shared: FcSharedOpt = False,
    seed: SeedOpt = 0,
    as_json: JsonOpt = False,
) -> None:
    """QA on BEAM chats: each chat's batches as dated sessions in its own scope; its knowledge-update,
    contradiction, temporal, extraction and abstention questions (category names in the report).
    Same systems, metrics and resumability as `eval locomo`."""
    from graphmem.evaluation.beam import CATEGORY_NAMES, load_beam

    convs = load_beam(data, roles=tuple(r.strip() for r in roles.split(",") if r.strip()))
    cfg = _qa_config(locals(), **_dataset_fields("beam", CATEGORY_NAMES))
    _run_qa(cfg, convs, _settings(), out, fc_port=fc_port, fc_ctx=fc_ctx, fc_shared=fc_shared, as_json=as_json)


@app.command("retrieval")
def retrieval_cmd(
    data: DataOpt,
    out: Annotated[
        Path, typer.Option("--out", help="output folder (retrieval.json, retrieval.md, recall_at_k.png)")
    ] = Path("eval-out/retrieval"),
    conversations: ConvOpt = None,
    sessions: SessOpt = None,
    max_questions: MaxQOpt = None,
    ks: Annotated[str, typer.Option("--ks", help="k values, comma-separated")] = "1,5,10,20,40,50",
    modes: Annotated[
        str, typer.Option("--modes", help="vector,links,hybrid,dense,full")
    ] = "vector,links,hybrid,dense,full",
    follows_links: Annotated[
        bool,
        typer.Option(
            "--follows-links/--no-follows-links",
            help="each turn FOLLOWS the previous one of its session, as a conversation is stored (off: ablation)",
        ),
    ] = True,
    reuse_tag: Annotated[
        str | None,
        typer.Option(
            "--reuse-tag", help="evaluate existing scopes locomo-<tag>-<sample> (e.g. enriched by `eval locomo`)"
        ),
    ] = None,
    token_budget: Annotated[
        int | None, typer.Option("--token-budget", help="budget for budget_recall@k (default: setting)")
    ] = None,
    tag: Annotated[
        str | None, typer.Option("--tag", help="scope tag of the raw notes (default raw-<embed text>[-follows])")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """LLM-free retrieval eval: evidence recall@k, all-evidence hit@k and context tokens per mode."""
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.locomo import parse_sessions
    from graphmem.evaluation.report import write_outputs
    from graphmem.evaluation.retrieval import (
        ALL_MODES,
        RetrievalConfig,
        run_retrieval_eval,
    )
    from graphmem.service import AsyncMemoryService

    mode_list = tuple(m.strip() for m in modes.split(",") if m.strip())
    bad = [m for m in mode_list if m not in ALL_MODES]
    if bad:
        raise InvalidInputError(f"unknown mode(s) {', '.join(bad)}; known: {', '.join(ALL_MODES)}")
    try:
        k_list = tuple(sorted({int(x) for x in ks.split(",") if x.strip()}))
    except ValueError:
        raise InvalidInputError("--ks must be integers, comma-separated") from None
    if not k_list or min(k_list) < 1 or max(k_list) > 1000:
        raise InvalidInputError("--ks must be between 1 and 1000")
    cfg = RetrievalConfig(
        ks=k_list,
        modes=mode_list,
        sessions=parse_sessions(sessions),
        follows_links=follows_links,
        reuse_tag=reuse_tag,
        max_questions=max_questions,
        token_budget=token_budget,
        tag=tag,
    )
    settings = _settings()
    convs = _conversations(data, conversations)

    async def main(update: Callable[[str, int, int], None]) -> dict[str, Any]:
        async with await AsyncMemoryService.create(settings) as svc:
            return await run_retrieval_eval(svc, convs, cfg, progress=update)

    with progress_bars() as update:
        result = asyncio.run(main(update))
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / "retrieval.md").read_text(encoding="utf-8"))
    _print_outputs(written)


@app.command("decisions")
def decisions_cmd(
    out: Annotated[
        Path, typer.Option("--out", help="output folder (decisions.json, decisions.md, decisions.png)")
    ] = Path("eval-out/decisions"),
    gold: Annotated[
        Path | None, typer.Option("--gold", help="gold conversations file (default: the shipped one; format in docs)")
    ] = None,
    conversations: Annotated[
        str | None, typer.Option("--conversations", "-c", help="conversation ids, comma-separated (default all)")
    ] = None,
    follows: Annotated[
        bool,
        typer.Option("--follows/--no-follows", help="each turn FOLLOWS the previous one (as conversations are stored)"),
    ] = True,
    keep: Annotated[
        bool, typer.Option("--keep", help="keep the run's notes in Neo4j (user eval-decisions) to explore")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Decision quality of the configured LLM: links and evolutions against gold conversations."""
    from graphmem.evaluation.decisions import DecisionsConfig, load_gold, run_decisions_eval
    from graphmem.evaluation.report import write_outputs
    from graphmem.local import chat_model
    from graphmem.service import AsyncMemoryService

    ids = tuple(x.strip() for x in conversations.split(",") if x.strip()) if conversations else ()
    load_gold(gold, ids or None)  # a bad file or id fails before anything starts
    cfg = DecisionsConfig(gold=gold, conversations=ids, follows=follows, keep_notes=keep)
    settings = _settings()

    async def main(update: Callable[[str, int, int], None]) -> dict[str, Any]:
        model = await asyncio.to_thread(chat_model, settings)  # the local LLM starts off the event loop
        async with await AsyncMemoryService.create(settings, chat_model=model) as svc:
            return await run_decisions_eval(svc, cfg, progress=update)

    with progress_bars() as update:
        result = asyncio.run(main(update))
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / "decisions.md").read_text(encoding="utf-8").split("\n## ", 1)[0])
    _print_outputs(written)


@app.command("updates")
def updates_cmd(
    out: Annotated[Path, typer.Option("--out", help="output folder (updates.json, updates.md)")] = Path(
        "eval-out/updates"
    ),
    gold: Annotated[
        Path | None, typer.Option("--gold", help="gold conversations file (default: the shipped updates gold)")
    ] = None,
    conversations: Annotated[
        str | None, typer.Option("--conversations", "-c", help="conversation ids, comma-separated (default all)")
    ] = None,
    compare: Annotated[
        bool, typer.Option("--compare", help="also run with supersession off (GRAPHMEM_ENABLE_SUPERSESSION=false)")
    ] = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="keep the run's notes in Neo4j (user eval-updates) to explore")
    ] = False,
    probe: Annotated[
        bool,
        typer.Option("--probe", help="only the yes/no decisions: every pair of turns, no enrichment, nothing stored"),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Memory that changes over time (issue 28): supersession precision/recall, conflicts, knock-on
    checks and answers about now / before / when / clashes, against gold conversations."""
    from graphmem.evaluation.updates import UpdatesConfig, load_gold, run_probe, run_updates_eval, write_outputs
    from graphmem.local import chat_model
    from graphmem.service import AsyncMemoryService

    ids = tuple(x.strip() for x in conversations.split(",") if x.strip()) if conversations else ()
    load_gold(gold, ids or None)  # a bad file or id fails before anything starts
    cfg = UpdatesConfig(gold=gold, conversations=ids, compare=compare, keep_notes=keep)
    settings = _settings()

    async def main(update: Callable[[str, int, int], None]) -> dict[str, Any]:
        model = await asyncio.to_thread(chat_model, settings)  # the local LLM starts off the event loop
        # the answers without the prompt cache, as `eval locomo` asks them (answers that repeat)
        answering = await asyncio.to_thread(chat_model, repeatable_answers(settings))
        async with await AsyncMemoryService.create(settings, chat_model=model, answer_model=answering) as svc:
            if probe:
                return await run_probe(svc, cfg, progress=update)
            if not compare:
                return await run_updates_eval(svc, cfg, progress=update)
            off = settings.model_copy(update={"enable_supersession": False})
            async with await AsyncMemoryService.create(
                off, chat_model=model, embedder=svc.embedder, answer_model=answering
            ) as base:
                return await run_updates_eval(svc, cfg, progress=update, baseline=base)

    with progress_bars() as update:
        result = asyncio.run(main(update))
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print(written["markdown"].read_text(encoding="utf-8"))
    _print_outputs(written)


@app.command("links")
def links_cmd(
    data: DataOpt,
    reuse_tag: Annotated[
        str,
        typer.Option(
            "--reuse-tag", help="the tag of scopes locomo-<tag>-<sample> that `eval locomo --ingest-only` filled"
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="output folder (links.json, links.md, links.png)")] = Path(
        "eval-out/links"
    ),
    conversations: ConvOpt = None,
    sessions: Annotated[
        str | None,
        typer.Option("--sessions", "-s", help="session numbers (default: those with stored turns, per conversation)"),
    ] = None,
    categories: Annotated[str, typer.Option("--categories", help="category ids, comma-separated")] = "1,2,3,4",
    samples: Annotated[int, typer.Option("--samples", help="random same-degree graphs per conversation")] = 100,
    swaps_per_edge: Annotated[int, typer.Option("--swaps-per-edge", help="double edge swaps per link")] = 10,
    seed: Annotated[int, typer.Option("--seed", help="seed of the random graphs and the bootstrap")] = 0,
    connectivity: Annotated[
        bool, typer.Option("--connectivity/--no-connectivity", help="evidence connectivity of the LLM links")
    ] = True,
    ablation: Annotated[
        bool, typer.Option("--ablation/--no-ablation", help="recall with links and evolution on/off (4 arm scopes)")
    ] = True,
    mode: Annotated[
        SearchMode | None, typer.Option("--mode", help="search mode of the ablation (default: setting)")
    ] = None,
    k: Annotated[
        int | None, typer.Option("-k", help="search k of the ablation (default: GRAPHMEM_ANSWER_K, what ask searches)")
    ] = None,
    token_budget: Annotated[int | None, typer.Option("--token-budget", help="context token budget")] = None,
    max_questions: MaxQOpt = None,
    drop_arms: Annotated[
        bool, typer.Option("--drop-arms", help="delete the arm scopes afterwards (default: keep them)")
    ] = False,
    rejudge_updates: Annotated[
        bool,
        typer.Option(
            "--rejudge-updates",
            help="first judge the ingest's supersessions and conflicts again with today's rules "
            "(replaces them; calls the LLM; no note changes)",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """LLM-free: evidence connectivity of the LLM's links vs random same-degree links, and recall with
    links and evolution on/off, on scopes an `eval locomo` ingest filled (``--rejudge-updates`` calls
    the LLM for the supersession step only)."""
    from graphmem.errors import InvalidInputError
    from graphmem.evaluation.links import LinksConfig, run_links_eval
    from graphmem.evaluation.locomo import parse_sessions
    from graphmem.evaluation.report import write_outputs
    from graphmem.models import check_id
    from graphmem.service import AsyncMemoryService

    check_id(f"locomo-{reuse_tag}", "--reuse-tag")
    if not connectivity and not ablation:
        raise InvalidInputError("nothing to do: --no-connectivity and --no-ablation")
    if not 1 <= samples <= 100_000 or not 1 <= swaps_per_edge <= 1000:
        raise InvalidInputError("--samples must be 1..100000 and --swaps-per-edge 1..1000")
    try:
        cats = tuple(int(c) for c in categories.split(",") if c.strip())
    except ValueError:
        raise InvalidInputError("--categories must be integers, comma-separated") from None
    cfg = LinksConfig(
        reuse_tag=reuse_tag,
        sessions=parse_sessions(sessions),
        categories=cats,
        samples=samples,
        swaps_per_edge=swaps_per_edge,
        seed=seed,
        connectivity=connectivity,
        ablation=ablation,
        mode=mode,
        k=k,
        token_budget=token_budget,
        max_questions=max_questions,
        drop_arms=drop_arms,
        rejudge_updates=rejudge_updates,
    )
    settings = _settings()
    convs = _conversations(data, conversations)

    async def main(update: Callable[[str, int, int], None]) -> dict[str, Any]:
        async with await AsyncMemoryService.create(settings) as svc:
            return await run_links_eval(svc, convs, cfg, progress=update)

    with progress_bars() as update:
        result = asyncio.run(main(update))
    written = write_outputs(result, out)
    if as_json:
        print_json(result)
        return
    console.print((out / "links.md").read_text(encoding="utf-8"))
    _print_outputs(written)
