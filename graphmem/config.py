"""Settings, read once at the edge (CLI, server start-up) and passed down.

Neo4j settings use the names langchain-neo4j users already know (``NEO4J_URI``,
``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``); everything else is
``GRAPHMEM_*``. A ``.env`` file in the working directory is read too.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from graphmem.errors import ConfigError
from graphmem.models import LIMITS, TEXT_FIELDS, SearchMode, TextField
from graphmem.redaction import register_secret

LocalModel = Literal["qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"]
ResolvedMethod = Literal["json_schema", "function_calling", "json_mode"]  # how structured output is asked for
StructuredMethod = Literal["auto", ResolvedMethod]
EmbedTextVariant = Literal["full", "content", "amem"]
Neo4jLine = Literal["5.26", "2026"]
# The version of each line that graphmem tests and the local server fetches unless told otherwise.
NEO4J_PINNED: dict[str, str] = {"5.26": "5.26.30", "2026": "2026.08.1"}
LocalServer = Literal["auto", "llama-server", "llama-cpp-python"]


def _default_home() -> Path:
    return Path.home() / ".local" / "share" / "graphmem"


class Settings(BaseSettings):
    """Every knob of graphmem. Field ``x`` is set by ``GRAPHMEM_X`` unless an alias says otherwise."""

    model_config = SettingsConfigDict(
        env_prefix="GRAPHMEM_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
        validate_default=True,
    )

    # --- Neo4j connection (langchain-neo4j names) ---
    neo4j_uri: str = Field(
        "bolt://127.0.0.1:7687", validation_alias=AliasChoices("NEO4J_URI", "NEO4J_URL", "neo4j_uri")
    )
    neo4j_username: str = Field("neo4j", validation_alias=AliasChoices("NEO4J_USERNAME", "neo4j_username"))
    neo4j_password: SecretStr | None = Field(None, validation_alias=AliasChoices("NEO4J_PASSWORD", "neo4j_password"))
    neo4j_database: str = Field("neo4j", validation_alias=AliasChoices("NEO4J_DATABASE", "neo4j_database"))
    neo4j_connect_timeout: float = Field(5.0, gt=0)

    # --- local Neo4j managed by `graphmem neo4j ...` ---
    home: Path = Field(default_factory=_default_home, description="data folder outside the repo")
    neo4j_line: Neo4jLine = "5.26"
    neo4j_version: str | None = Field(None, pattern=r"^(5\.\d+\.\d+|20\d\d\.\d\d\.\d+)$")
    neo4j_browser_version: str = "5.24.0"
    neo4j_http_port: int = Field(7474, ge=1, le=65535)
    neo4j_heap: str = Field("1g", pattern=r"^\d+[kmgKMG]$")
    neo4j_pagecache: str = Field("512m", pattern=r"^\d+[kmgKMG]$")

    # --- embeddings ---
    embedder: Literal["minilm", "openai"] = "minilm"
    openai_embedding_model: str = "text-embedding-3-small"
    embedding_dimensions: int | None = Field(None, ge=1, le=4096)
    embed_batch_size: int = Field(32, ge=1, le=1024)
    embed_threads: int = Field(2, ge=1, le=64)

    # --- LLM ---
    llm_provider: Literal["auto", "local", "openai", "compatible"] = "auto"
    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("GRAPHMEM_LLM_API_KEY", "OPENAI_API_KEY", "llm_api_key")
    )
    llm_model: str = "gpt-4o-mini"
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0)
    llm_max_tokens: int = Field(512, ge=16, le=32768)
    llm_timeout: float = Field(120.0, gt=0)
    llm_max_retries: int = Field(3, ge=0, le=20, description="retries on 429/5xx/timeouts")
    llm_repair_attempts: int = Field(1, ge=0, le=10, description="re-asks after malformed output")
    llm_seed: int | None = 0
    structured_output_method: StructuredMethod = "auto"
    local_model: LocalModel = "qwen2.5-coder-1.5b"
    local_llm_port: int = Field(8011, ge=1, le=65535)
    local_llm_threads: int = Field(2, ge=1, le=64)
    local_llm_ctx: int = Field(4096, ge=512, le=32768)
    local_llm_server: LocalServer = "auto"
    local_llm_parallel: int = Field(4, ge=1, le=64)
    local_llm_max_wait: float = Field(1800.0, gt=0)
    # llama-server reuses the cached prefix of a slot's last prompt: faster, but a cached prefix and
    # a recomputed one round differently, so the same prompt can get another greedy answer (llama.cpp's
    # README says so). False: every prompt is processed whole and answers repeat (the evaluations).
    local_llm_cache_prompt: bool = True

    # --- A-MEM algorithm and its ablation switches ---
    neighbour_k: int = Field(5, ge=0, le=50)
    # How the LLM decides links (docs/evaluation.md has the measurements): "joint" is A-MEM's one call
    # over all neighbours with typed links and neighbour updates; "pairwise" asks one yes/no question
    # per nearest candidate; "auto" is pairwise for the local model and joint for other endpoints.
    link_decision: Literal["auto", "joint", "pairwise"] = "auto"
    # 1 nearest + 2 sharing rarer words (7 December): the model's links joined 30 of the 116 LoCoMo
    # evidence pairs of conv-26 and conv-30 against 20 for as many nearest-neighbour links (1.50x; 2
    # nearest + 1 word 28 against 22, 1.27x) at the same 3 questions per note, and the gold's precision
    # and recall held (0.90 / 0.75; docs/evaluation.md, "Which candidates the decision is shown").
    link_candidates: int = Field(1, ge=1, le=50, description="pairwise: nearest neighbours judged")
    link_threshold: float = Field(0.26, ge=0.0, le=1.0, description="pairwise: P(yes) needed for a link")
    link_word_candidates: int = Field(
        2,
        ge=0,
        le=20,
        description="earlier notes sharing the new note's rarer words (full-text), judged beside the nearest",
    )
    # A pairwise link's reason is read by people (Neo4j Browser, `graphmem links`), never by search or the
    # answer: the words both notes use name it without a call and cannot invent (issue 27: the model's
    # reasons took 1.75 calls and ~280 tokens per demo note). The joint decision writes reasons in its call.
    link_reasons: Literal["shared-words", "llm"] = Field(
        "shared-words", description="pairwise: a link's reason from the words both notes use, or one LLM call per link"
    )
    enable_enrichment: bool = True
    ground_enrichment: bool = Field(
        True, description="drop enrichment sentences and keywords the note does not support (reported)"
    )
    enable_links: bool = True
    # None: on, except with the local model, where it measured no gain (docs/evaluation.md, "Defaults").
    enable_evolution: bool | None = Field(
        None, description="LLM updates neighbours after a new note; unset = on, off for the local model"
    )
    # One call per linked neighbour was 2.85 calls per note on conv-30; the strongest link's alone is
    # one call, and kept most of the recall but measured lower answers (docs/evaluation.md, "Evolution
    # of the strongest link"): 0 keeps A-MEM's behaviour, 1 is the cheaper one.
    evolution_neighbours: int = Field(
        0,
        ge=0,
        le=50,
        description="pairwise: linked neighbours one add evolves, strongest link first (0: every linked one; 1: one call per note)",
    )
    # Re-embedding an evolved neighbour moved it away from the questions about what it says (LoCoMo
    # ablation: recall 0.745 with, 0.863 without evolution); A-MEM's evaluation kept the old vectors too.
    evolution_reembed: bool = Field(
        False, description="re-embed a neighbour from its evolved context (off: its search vector stays)"
    )
    # Evolution without a call (issue 27): the neighbours an add links to get its keywords, which reach
    # the full-text index; context, tags and search vector stay. On conv-30 and conv-41 whole: budgeted
    # recall +0.012 [+0.001, +0.026] (233 questions), multi-hop and temporal F1 +0.3 [-1.2, +2.1] (95),
    # no call, no token (docs/evaluation.md, "The write path's steps, measured on the context ask gives").
    evolution_words: bool = Field(
        True, description="an add's keywords grow the keywords of the neighbours it links to (no LLM call)"
    )
    # Memory that changes over time (issue 28): a later note with a newer value of what an earlier note
    # of the scope states supersedes it (SUPERSEDES + valid_to; nothing rewritten); one yes/no per pair.
    enable_supersession: bool = Field(True, description="find notes a new note supersedes or clashes with")
    supersession_candidates: int = Field(4, ge=1, le=50, description="earlier notes judged per new note")
    # The yes/no question lists the facts it is about (home, flatmate, job, manager, instrument, sport,
    # diet, vehicle, partner, pet); a note naming none of them and no change ("now", "moved", "left", ...)
    # is not asked about: 3 LoCoMo turns in 4, none of the updates gold's newer notes (docs/updates.md);
    # nor is an earlier note that names only other kinds of fact (a flat against a manager).
    supersession_gate: bool = Field(
        True,
        description="judge only notes that name a changeable fact or a change, against notes that name a kind "
        "of fact in common (home, work, ...), by the same speaker or speaking about the other one, and not said "
        "minutes before in the same sitting (off: every pair)",
    )
    # 0.7: on the updates gold the 1.5B's P(yes) for pairs that really changed was 0.63-0.81, for other
    # pairs of one person 0.50-0.73 (docs/updates.md); a hosted model's answers are near 0 or 1.
    supersession_threshold: float = Field(
        0.7, ge=0.0, le=1.0, description="P(yes) needed for a supersession, a conflict or a knock-on report"
    )
    # A pair the first question passed is asked a second one, "can both be true at the same time?",
    # and written only below this P(yes): the first question's P(yes) was 0.70-0.80 for the 21
    # supersessions and conflicts a whole LoCoMo conversation stored (nearly all wrong) as for the
    # gold's true changes; the second's was 0.58-0.91 for those and 0.35-0.57 for these (docs/updates.md).
    supersession_coexist_max: float = Field(
        0.6,
        ge=0.0,
        le=1.0,
        description="P(yes) of 'can both notes be true at once?' under which a judged pair is written (1: no check)",
    )
    embed_text_variant: EmbedTextVariant = "full"
    max_content_chars: int = Field(8000, ge=1, le=1_000_000)
    search_k: int = Field(10, ge=1, le=LIMITS.k_max)
    search_mode: SearchMode = SearchMode.HYBRID
    links_per_hit: int = Field(3, ge=0, le=50)
    # ask packs its context from more hits and no linked notes: on conv-30 (81 questions, answers that
    # repeat) 20 hits without links scored F1 +3.3 [-1.4, +7.9] over 10 hits with 3 links each at the
    # same budget, temporal +9.4 [+0.8, +18.8] (docs/evaluation.md, "Linked notes in the answer").
    answer_k: int = Field(20, ge=1, le=LIMITS.k_max, description="hits `ask` packs its context from (search: search_k)")
    answer_links_per_hit: int | None = Field(
        0, ge=0, le=50, description="linked notes per hit in `ask`'s context (unset: links_per_hit)"
    )
    # What the hits leave of the budget goes to their linked notes (in a conversation, the turns before and
    # after a hit): budgeted recall +0.058 [+0.036, +0.082] held out on two whole LoCoMo conversations,
    # +0.025 [+0.013, +0.040] on the three it was found on (docs/evaluation.md, "Linked notes after the hits").
    answer_fill_links_per_hit: int = Field(
        2, ge=0, le=50, description="linked notes per hit that fill what `ask`'s budget leaves after its hits (0: none)"
    )
    # A pool that does not depend on k makes the results for different k nest (budget recall monotone).
    search_pool: int = Field(
        40, ge=1, le=1000, description="links/hybrid: vector candidates ranked before the cut (full-text: half)"
    )
    fulltext_weight: float = Field(
        0.4, ge=0.0, le=10.0, description="hybrid: cosine points the best full-text match gains"
    )
    common_word_share: float = Field(
        0.1,
        ge=0.0,
        le=1.0,
        description="hybrid: query words in more than this share of the scope's notes skip full-text (1 = none)",
    )
    # content + tags since 7 December: the LLM's contexts and keywords in the full-text leg cost
    # budgeted recall (conv-30 and conv-41 +0.026 [-0.002, +0.052] without them, held out on conv-42
    # +0.046 [+0.015, +0.082]; docs/evaluation.md, "What search reads"). Link candidates read every field.
    search_text_fields: str = Field(
        "content,tags",
        description="hybrid search: the note fields its full-text leg reads, comma-separated "
        "(content, context, keywords, tags)",
    )
    over_fetch_ratio: int = Field(4, ge=1, le=100)
    in_index_over_fetch: int = Field(3, ge=1, le=100)
    exact_scan_max_notes: int = Field(2000, ge=0, le=1_000_000)
    context_token_budget: int = Field(1000, ge=LIMITS.token_budget_min, le=LIMITS.token_budget_max)
    # Off since issue 27's whole-conversation runs: on conv-26 the contexts took a fifth of the budget,
    # budgeted recall +0.037 [+0.014, +0.066] without them (multi-hop +0.109), QA F1 equal overall
    # (docs/evaluation.md, "What enrichment is worth in the answer").
    answer_shows_context: bool = Field(
        False, description="the answer context writes each note's LLM-written context after its content"
    )
    max_concurrent_reads: int = Field(
        2, ge=1, le=256, description="searches, pages and exports one service runs at once (more wait)"
    )
    ingest_concurrency: int | None = Field(
        None,
        ge=1,
        le=1024,
        description="notes in flight in an agentic bulk ingest; unset = 8, or the local server's slots",
    )

    # --- REST / MCP ---
    api_keys: SecretStr | None = Field(
        None,
        description="comma-separated keys; 'key=user/agent/run' binds a key to a scope",
    )
    auth_disabled: bool = False
    http_max_body_bytes: int = Field(
        1_048_576, ge=1024, le=64 * 1_048_576, description="largest REST request body in bytes (413 above)"
    )
    http_max_header_bytes: int = Field(
        16_384, ge=1024, le=1_048_576, description="largest REST request line and headers in bytes (400 above)"
    )
    http_header_timeout: float = Field(
        10.0, gt=0, le=600, description="seconds a REST client has to send a request's headers (408 after)"
    )
    http_body_timeout: float = Field(
        30.0, gt=0, le=3600, description="seconds a REST client has to send a request's body (408 after)"
    )
    http_keepalive_timeout: int = Field(5, ge=1, le=600, description="seconds an idle REST connection stays open")
    http_max_connections: int = Field(
        100, ge=1, le=100_000, description="open REST connections at most (503 and closed above)"
    )
    mcp_user_id: str = "default"
    mcp_agent_id: str = "default"
    mcp_run_id: str = "default"

    @field_validator("neo4j_uri")
    @classmethod
    def _check_uri(cls, value: str) -> str:
        schemes = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")
        if not value.startswith(schemes):
            raise ValueError(f"must start with one of {', '.join(schemes)}")
        rest = value.split("://", 1)[1].split("?", 1)[0]
        if "@" in rest:
            # The driver refuses credentials in the URI and its error quotes the URI: the password
            # would reach a traceback (issue 16). Refused here, without echoing the value.
            register_secret(rest.rsplit("@", 1)[0].partition(":")[2])
            raise ValueError(
                "must not hold a user or password: put them in NEO4J_USERNAME and NEO4J_PASSWORD "
                "(the URI is not repeated here because it holds a secret)"
            )
        return value

    @field_validator("search_text_fields")
    @classmethod
    def _check_text_fields(cls, value: str) -> str:
        fields = [f.strip() for f in value.split(",") if f.strip()]
        unknown = [f for f in fields if f not in TEXT_FIELDS]
        if not fields or unknown:
            raise ValueError(f"must name one or more of {', '.join(TEXT_FIELDS)}, comma-separated")
        return ",".join(f for f in TEXT_FIELDS if f in fields)

    @property
    def search_fields(self) -> tuple[TextField, ...]:
        """``search_text_fields`` as field names, in the index's order."""
        return tuple(f for f in TEXT_FIELDS if f in self.search_text_fields.split(","))

    @field_validator("neo4j_database")
    @classmethod
    def _check_db(cls, value: str) -> str:
        if not value or len(value) > 63:
            raise ValueError("must be a non-empty database name")
        return value

    @model_validator(mode="after")
    def _register_secrets(self) -> Settings:
        """Every secret these settings hold is removed from logs and messages (``redaction.redact``)."""
        for secret in (self.neo4j_password, self.llm_api_key):
            if secret is not None:
                register_secret(secret.get_secret_value())
        if self.api_keys is not None:
            for entry in self.api_keys.get_secret_value().split(","):
                register_secret(entry.partition("=")[0].strip())
        return self

    @model_validator(mode="after")
    def _check_provider(self) -> Settings:
        if self.llm_provider == "compatible" and not self.llm_base_url:
            raise ValueError("GRAPHMEM_LLM_PROVIDER=compatible needs GRAPHMEM_LLM_BASE_URL")
        if self.llm_provider == "openai" and self.llm_api_key is None:
            raise ValueError("GRAPHMEM_LLM_PROVIDER=openai needs OPENAI_API_KEY or GRAPHMEM_LLM_API_KEY")
        return self

    @model_validator(mode="after")
    def _check_neo4j_line(self) -> Settings:
        """An exact version names its line; a contradicting explicit line is an error, not a guess."""
        if self.neo4j_version is None:
            return self
        line: Neo4jLine = "5.26" if self.neo4j_version.startswith("5.") else "2026"
        if "neo4j_line" in self.model_fields_set and self.neo4j_line != line:
            raise ValueError(
                f"GRAPHMEM_NEO4J_VERSION={self.neo4j_version} is a {line} version but GRAPHMEM_NEO4J_LINE="
                f"{self.neo4j_line}: set one of them"
            )
        self.neo4j_line = line
        return self

    @property
    def neo4j_server_version(self) -> str:
        """The exact version of the local server: GRAPHMEM_NEO4J_VERSION, else the line's pinned one."""
        return self.neo4j_version or NEO4J_PINNED[self.neo4j_line]

    @property
    def resolved_llm_provider(self) -> Literal["local", "openai", "compatible"]:
        """``auto`` is the local model unless an API key or base URL is configured."""
        if self.llm_provider != "auto":
            return self.llm_provider
        if self.llm_base_url:
            return "compatible"
        if self.llm_api_key is not None:
            return "openai"
        return "local"

    @property
    def evolution_enabled(self) -> bool:
        """``enable_evolution``, or its default: off for the local model (the LoCoMo ablation measured
        no gain from its evolutions, and each costs an LLM call and a drift risk), on otherwise."""
        if self.enable_evolution is not None:
            return self.enable_evolution
        return self.resolved_llm_provider != "local"

    @property
    def resolved_answer_links_per_hit(self) -> int:
        """The linked notes per hit ``ask`` packs: ``answer_links_per_hit``, unset = ``links_per_hit``."""
        return self.links_per_hit if self.answer_links_per_hit is None else self.answer_links_per_hit

    @property
    def resolved_link_decision(self) -> Literal["joint", "pairwise"]:
        """``auto``: pairwise for the local model (small models judge one pair far better than a list)."""
        if self.link_decision != "auto":
            return self.link_decision
        return "pairwise" if self.resolved_llm_provider == "local" else "joint"

    @property
    def resolved_ingest_concurrency(self) -> int:
        """Notes in flight in an agentic bulk ingest. The local server decodes one request per slot
        at once: as many notes as slots keeps every slot busy (4 on 2 cores measured 1.58x the
        throughput of one note at a time, 2 only 1.43x; docs/local-llm.md) without a queue."""
        if self.ingest_concurrency is not None:
            return self.ingest_concurrency
        return self.local_llm_parallel if self.resolved_llm_provider == "local" else 8

    @property
    def neo4j_auth(self) -> tuple[str, str] | None:
        if self.neo4j_password is None:
            return None
        password = self.neo4j_password.get_secret_value()
        register_secret(password)  # also for settings made without validation (model_copy)
        return (self.neo4j_username, password)

    @property
    def vector_dimensions(self) -> int:
        if self.embedding_dimensions is not None:
            return self.embedding_dimensions
        return 384 if self.embedder == "minilm" else 1536

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"


def load_settings(**overrides: object) -> Settings:
    """Read settings from the environment and ``.env``; raise ConfigError naming the bad setting."""
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "settings"
            problems.append(f"{_env_name(loc)}: {err['msg']}")
        raise ConfigError("invalid settings: " + "; ".join(problems)) from None


def _env_name(field: str) -> str:
    aliases = {
        "neo4j_uri": "NEO4J_URI",
        "neo4j_username": "NEO4J_USERNAME",
        "neo4j_password": "NEO4J_PASSWORD",
        "neo4j_database": "NEO4J_DATABASE",
        "llm_api_key": "GRAPHMEM_LLM_API_KEY",
    }
    if field in aliases:
        return aliases[field]
    if field in Settings.model_fields:
        return "GRAPHMEM_" + field.upper()
    return field


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """Cached settings for interfaces (CLI, REST, MCP); library code takes Settings as an argument."""
    return load_settings()
