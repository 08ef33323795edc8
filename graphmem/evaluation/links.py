"""What the LLM's links and evolutions do on LoCoMo, measured on scopes ``graphmem eval locomo`` filled.

Two measurements over the scopes ``locomo-<tag>-<sample>`` of one ingest (issue 18, deliverable 1):

**Evidence connectivity.** For each question (categories 1-4 by default) with two or more evidence
turns stored, every unordered pair of its evidence turns; the share of those pairs joined by an
LLM link (1 hop) and within 2 hops along LLM links, links taken as undirected. LLM links are all
links except the turn links ``add(..., follows=...)`` writes (``FOLLOWS`` with ``FOLLOWS_REASON``);
a ``FOLLOWS`` the model proposed counts as an LLM link. Pairs are counted per question (a pair two
questions share counts twice). Against:

- **random links with the same degree sequence**: the scope's LLM-link graph (simple, undirected,
  over all its notes) rewired by degree-preserving double edge swaps (Maslov-Sneppen; ``rewire``),
  ``swaps_per_edge`` x edges accepted swaps per sample, each sample rewired afresh from the real
  graph, ``samples`` samples from one seed. Chosen over a configuration model because it keeps
  every note's degree exactly and makes no self-loops or multi-edges (a configuration model needs
  both removed, which changes the degrees). Reported: the mean rate, its spread, the ratio
  observed / mean and the share of samples at or above the observed rate (a one-sided p-value).
- **nearest-neighbour links** (context, not a target): each note linked to as many of its most
  similar earlier notes (cosine of the stored embeddings) as it made LLM links: what linking
  without the LLM's choice would connect.
- the turn links alone and all links (LLM + turn), for scale.

**The ablation A-MEM reports, on retrieval.** From each ingested scope (links and evolution on),
seven arm scopes ``locomo-<tag>.<arm>-<sample>`` are derived through the service's export and
import: ``full`` (a copy), ``no-links`` (the LLM links dropped, the turn links kept), ``no-evolution``
(every evolved note back to its values before its first evolution, read from its versions, and
re-embedded by the import), ``neither``, ``no-enrichment`` (keywords, tags and context emptied,
so the note is embedded and full-text indexed from its content alone, as the LLM-free path stores
it; links kept), ``no-supersession`` (the supersessions and conflicts dropped: every note current) and
``with-context`` (the notes as stored, each written into the answer context with its LLM-written
context, as before issue 27: ``GRAPHMEM_ANSWER_SHOWS_CONTEXT=true``; the default writes content alone). Then ``eval retrieval``'s recall@k within the ask budget (default search, k=10,
the same questions) for each arm, per category, and the share of questions with every evidence
turn inside the budget, with the paired bootstrap interval of each arm's difference from ``full``.
The arms differ only post hoc: in a real ingest without evolution the model would also have seen
other neighbour texts and linked differently.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from graphmem.errors import InvalidInputError
from graphmem.evaluation import Progress
from graphmem.evaluation.compare import paired_bootstrap
from graphmem.evaluation.locomo import CATEGORY_NAMES, Conversation
from graphmem.evaluation.retrieval import RetrievalConfig, evaluate_conversation, merge, scope_for, summarise
from graphmem.models import FOLLOWS_REASON, LinkType, Note, NoteVersion, Scope
from graphmem.service import AsyncMemoryService, embed_text, lent_keywords
from graphmem.store import BenchQueries

Edge = tuple[str, str]


class ArmSpec(NamedTuple):
    """What an arm keeps of the ingested scope."""

    links: bool  # the LLM's links (turn links always)
    # evolved values (False: each evolved note back to its first values; "strongest": only the
    # evolutions an add made to the neighbour of its strongest link, as ``evolution_neighbours=1``)
    evolution: bool | str
    enrichment: bool  # keywords, tags and context (off: content alone, re-embedded)
    updates: bool  # supersessions and conflicts (issue 28; off: every note current)
    context: bool | None = None  # the notes' LLM-written contexts in the answer context (None: the setting)
    # evolution without a call: each LLM link's later note lends its keywords to the earlier note it
    # links to (the words reach the full-text index; the search vector and the note's words stay)
    link_words: bool = False
    # the search vector embedded from this text variant (None: the ingest's vectors; service/text.py)
    embed_variant: str | None = None


STRONGEST = "strongest"

# The order of the report's columns.
ARMS: dict[str, ArmSpec] = {
    "full": ArmSpec(True, True, True, True),
    "no-evolution": ArmSpec(True, False, True, True),
    "strongest-evolution": ArmSpec(True, STRONGEST, True, True),
    "no-links": ArmSpec(False, True, True, True),
    "neither": ArmSpec(False, False, True, True),
    "no-enrichment": ArmSpec(True, True, False, True),
    "no-supersession": ArmSpec(True, True, True, False),
    "with-context": ArmSpec(True, True, True, True, True),
    "word-evolution": ArmSpec(True, False, True, True, None, True),
    "content-vector": ArmSpec(True, True, True, True, None, False, "content"),
}
_ARM_CODES = {
    "full": "af",
    "no-evolution": "ae",
    "strongest-evolution": "ao",
    "no-links": "al",
    "neither": "an",
    "no-enrichment": "ax",
    "no-supersession": "as",
    "with-context": "ac",
    "word-evolution": "aw",
    "content-vector": "av",
}
# Arms also compared with an arm other than full (arm minus the other): the cheaper evolution
# against none, the comparison that decides whether it is on by default.
ARM_PAIRS: tuple[tuple[str, str], ...] = (
    ("strongest-evolution", "no-evolution"),
    ("word-evolution", "no-evolution"),
)
TARGET_RATIO = 2.0  # issue 18: evidence connectivity through LLM links at least 2x the random rate
EMBEDDING_CHECK_MIN_COSINE = 0.999


@dataclass
class LinksConfig:
    reuse_tag: str  # the scopes locomo-<tag>-<sample> an `eval locomo` ingest filled
    sessions: list[int] | None = None  # default: the sessions with stored turns, per conversation
    categories: tuple[int, ...] = (1, 2, 3, 4)
    samples: int = 100  # random graphs per conversation
    swaps_per_edge: int = 10
    seed: int = 0
    connectivity: bool = True
    ablation: bool = True
    mode: str | None = None  # search mode of the ablation; default settings.search_mode
    k: int | None = None  # default settings.answer_k (what ask searches)
    token_budget: int | None = None  # default settings.context_token_budget
    max_questions: int | None = None  # per conversation, ablation only
    bootstrap: int = 2000  # resamples of the paired difference between arms
    drop_arms: bool = False  # delete the arm scopes afterwards
    rejudge_updates: bool = False  # judge the ingest's supersessions again with today's rules first


# --- links as a graph -----------------------------------------------------------------------------


def is_turn_link(link: Mapping[str, Any]) -> bool:
    """A conversation-turn link written by ``add(..., follows=...)``, not by the LLM."""
    return link.get("type") == LinkType.FOLLOWS.value and link.get("reason") == FOLLOWS_REASON


def edge(a: str, b: str) -> Edge:
    return (a, b) if a <= b else (b, a)


def link_edges(records: Sequence[Mapping[str, Any]], *, turn: bool) -> set[Edge]:
    """Undirected, simple edges of the exported records: the turn links (``turn``) or the LLM links."""
    ids = {r["id"] for r in records}
    out: set[Edge] = set()
    for r in records:
        for link in r.get("links") or []:
            target = link["target_id"]
            if target != r["id"] and target in ids and is_turn_link(link) == turn:
                out.add(edge(r["id"], target))
    return out


def adjacency(nodes: Iterable[str], edges: Iterable[Edge]) -> dict[str, set[str]]:
    adj: dict[str, set[str]] = {n: set() for n in nodes}
    for a, b in edges:
        adj.setdefault(a, set()).add(b)
        adj.setdefault(b, set()).add(a)
    return adj


def joined(adj: Mapping[str, set[str]], a: str, b: str) -> tuple[bool, bool]:
    """(a and b share an edge, a and b are at most 2 hops apart)."""
    na, nb = adj.get(a, set()), adj.get(b, set())
    one = b in na
    return one, one or not na.isdisjoint(nb)


def rewire(
    edges: Iterable[Edge], rng: random.Random, swaps: int, *, max_tries: int | None = None
) -> tuple[list[Edge], int]:
    """Degree-preserving randomisation by double edge swaps: pick edges (a, b) and (c, d), orient the
    second at random, replace them by (a, d) and (c, b) unless that makes a self-loop or an edge that
    exists. Returns (edges, accepted swaps); every node keeps its degree and the graph stays simple."""
    current = sorted(edge(a, b) for a, b in edges)  # sorted: the same seed gives the same graph
    present = set(current)
    m = len(current)
    if m < 2 or swaps <= 0:
        return current, 0
    tries_left = 20 * swaps if max_tries is None else max_tries
    done = 0
    while done < swaps and tries_left > 0:
        tries_left -= 1
        i, j = rng.randrange(m), rng.randrange(m)
        if i == j:
            continue
        a, b = current[i]
        c, d = current[j]
        if rng.random() < 0.5:
            c, d = d, c
        if a == d or c == b:
            continue
        e1, e2 = edge(a, d), edge(c, b)
        if e1 in present or e2 in present:
            continue
        present.difference_update((current[i], current[j]))
        present.update((e1, e2))
        current[i], current[j] = e1, e2
        done += 1
    return current, done


def nearest_neighbour_edges(records: Sequence[Mapping[str, Any]], llm_edges: set[Edge]) -> set[Edge]:
    """Each note linked to as many of its most similar earlier notes as it made LLM links (as source).

    ``records`` in insertion order (as exported: oldest first); similarity is the cosine of the stored
    embeddings (evolved notes with their final vectors)."""
    ids = [r["id"] for r in records]
    out_degree = dict.fromkeys(ids, 0)
    for r in records:
        targets = {link["target_id"] for link in r.get("links") or [] if edge(r["id"], link["target_id"]) in llm_edges}
        out_degree[r["id"]] = len(targets)
    vectors = [r.get("embedding") for r in records]
    if not any(out_degree.values()) or any(v is None for v in vectors):
        return set()
    mat = np.asarray(vectors, dtype=np.float64)
    mat /= np.maximum(np.linalg.norm(mat, axis=1, keepdims=True), 1e-12)
    out: set[Edge] = set()
    for i, nid in enumerate(ids):
        d = min(out_degree[nid], i)
        if d <= 0:
            continue
        sims = mat[:i] @ mat[i]
        for j in np.argsort(-sims, kind="stable")[:d]:
            out.add(edge(nid, ids[int(j)]))
    return out


# --- evidence pairs -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvidencePair:
    sample_id: str
    qa_index: int
    category: int
    a: str  # dia ids
    b: str
    cross_session: bool


def turn_notes(records: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each stored turn's (dia id's) note: the first exported record with that source id."""
    out: dict[str, str] = {}
    for r in records:
        if r.get("source_id"):
            out.setdefault(r["source_id"], r["id"])
    return out


def stored_sessions(conv: Conversation, dia_ids: Iterable[str]) -> list[int]:
    """The sessions with at least one stored turn (what an ingest with ``--sessions`` stored)."""
    return sorted({s for d in dia_ids if (s := conv.session_of(d)) is not None})


def evidence_pairs(
    conv: Conversation, stored: set[str], categories: Iterable[int], sessions: Sequence[int] | None
) -> list[EvidencePair]:
    """Every pair of stored evidence turns of every question with two or more of them."""
    out: list[EvidencePair] = []
    for q in conv.questions(categories=categories, sessions=sessions):
        ev = sorted(set(q.evidence) & stored)
        for a, b in itertools.combinations(ev, 2):
            out.append(
                EvidencePair(conv.sample_id, q.index, q.category, a, b, conv.session_of(a) != conv.session_of(b))
            )
    return out


def stored_evidence_pairs(
    conv: Conversation, note_of: Mapping[str, str], categories: Iterable[int], sessions: Sequence[int] | None = None
) -> list[EvidencePair]:
    """The evidence pairs among the stored turns (``note_of``: turn -> note), of ``sessions`` or else of
    every session with a stored turn: what ``eval links`` counts, and the replays of its ingests."""
    sessions = list(sessions) if sessions else stored_sessions(conv, note_of)
    return evidence_pairs(conv, set(note_of) & conv.dia_ids(sessions), categories, sessions)


def subsets(pairs: Sequence[EvidencePair]) -> dict[str, list[int]]:
    """Pair indices per reported subset: all, same / cross session, each category."""
    out: dict[str, list[int]] = {"all": list(range(len(pairs)))}
    out["same session"] = [i for i, p in enumerate(pairs) if not p.cross_session]
    out["cross session"] = [i for i, p in enumerate(pairs) if p.cross_session]
    for cat in sorted({p.category for p in pairs}):
        out[f"{cat} {CATEGORY_NAMES.get(cat, '')}".strip()] = [i for i, p in enumerate(pairs) if p.category == cat]
    return out


def _rates(hits: npt.NDArray[np.bool_], idx: Sequence[int]) -> float | None:
    return float(hits[list(idx)].mean()) if idx else None


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None:
        return None
    if b == 0:
        return None if a == 0 else float("inf")
    return a / b


# --- connectivity -----------------------------------------------------------------------------------


@dataclass
class _ConvGraph:
    sample_id: str
    dia_to_note: dict[str, str]
    nodes: list[str]
    llm: set[Edge]
    turn: set[Edge]
    knn: set[Edge]
    pairs: list[EvidencePair]


def _hits(adj: Mapping[str, set[str]], g: _ConvGraph) -> tuple[list[bool], list[bool]]:
    one, two = [], []
    for p in g.pairs:
        h1, h2 = joined(adj, g.dia_to_note[p.a], g.dia_to_note[p.b])
        one.append(h1)
        two.append(h2)
    return one, two


def connectivity(graphs: Sequence[_ConvGraph], cfg: LinksConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Observed and baseline rates over the pooled pairs of all conversations (JSON-ready)."""
    pairs = [p for g in graphs for p in g.pairs]
    observed: dict[str, tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]] = {}
    pickers: dict[str, Callable[[_ConvGraph], set[Edge]]] = {
        "llm": lambda g: g.llm,
        "nearest": lambda g: g.knn,
        "turn": lambda g: g.turn,
        "all_links": lambda g: g.llm | g.turn,
    }
    for name, pick in pickers.items():
        one: list[bool] = []
        two: list[bool] = []
        for g in graphs:
            h1, h2 = _hits(adjacency(g.nodes, pick(g)), g)
            one += h1
            two += h2
        observed[name] = (np.asarray(one, dtype=bool), np.asarray(two, dtype=bool))

    # Random graphs: sample s rewires every conversation's LLM graph once (its own seeded stream).
    rand1 = np.zeros((cfg.samples, len(pairs)), dtype=bool)
    rand2 = np.zeros((cfg.samples, len(pairs)), dtype=bool)
    graph_info: dict[str, Any] = {}
    col = 0
    for g in graphs:
        rng = random.Random(f"{cfg.seed}:{g.sample_id}")
        accepted = 0
        wanted = cfg.swaps_per_edge * len(g.llm)
        for s in range(cfg.samples):
            rewired, done = rewire(g.llm, rng, wanted)
            accepted += done
            h1, h2 = _hits(adjacency(g.nodes, rewired), g)
            rand1[s, col : col + len(g.pairs)] = h1
            rand2[s, col : col + len(g.pairs)] = h2
            if progress is not None:
                progress(f"random graphs {g.sample_id}", s + 1, cfg.samples)
        col += len(g.pairs)
        degrees = [len(v) for v in adjacency(g.nodes, g.llm).values()]
        graph_info[g.sample_id] = {
            "notes": len(g.nodes),
            "llm_links": len(g.llm),
            "turn_links": len(g.turn),
            "nearest_links": len(g.knn),
            "linked_notes": sum(1 for d in degrees if d),
            "mean_degree": float(np.mean(degrees)) if degrees else 0.0,
            "max_degree": max(degrees, default=0),
            "questions": len({p.qa_index for p in g.pairs}),
            "pairs": len(g.pairs),
            "swaps_accepted": accepted / (wanted * cfg.samples) if wanted and cfg.samples else None,
        }

    out_subsets: dict[str, Any] = {}
    for name, idx in subsets(pairs).items():
        row: dict[str, Any] = {
            "pairs": len(idx),
            "questions": len({(pairs[i].sample_id, pairs[i].qa_index) for i in idx}),
        }
        for hop, k in (("hop1", 0), ("hop2", 1)):
            for kind, arrays in observed.items():
                row.setdefault(kind, {})[hop] = _rates(arrays[k], idx)
            rmat = rand1 if k == 0 else rand2
            per_sample = rmat[:, idx].mean(axis=1) if idx and cfg.samples else np.zeros(0)
            llm_rate = row["llm"][hop]
            row.setdefault("random", {})[hop] = (
                {
                    "mean": float(per_sample.mean()),
                    "std": float(per_sample.std()),
                    "p05": float(np.percentile(per_sample, 5)),
                    "p95": float(np.percentile(per_sample, 95)),
                    # one-sided: share of random graphs that join at least as many pairs (+1 smoothing)
                    "p_value": float((np.sum(per_sample >= llm_rate) + 1) / (len(per_sample) + 1)),
                }
                if len(per_sample) and llm_rate is not None
                else None
            )
            rnd = row["random"][hop]
            row.setdefault("ratio", {})[hop] = _ratio(llm_rate, rnd["mean"] if rnd else None)
        out_subsets[name] = row
    overall = out_subsets["all"]
    target = {
        "ratio_required": TARGET_RATIO,
        "hop1_ratio": overall["ratio"]["hop1"],
        "hop2_ratio": overall["ratio"]["hop2"],
    }
    for hop in ("hop1", "hop2"):
        r = target[f"{hop}_ratio"]
        target[f"{hop}_met"] = None if r is None else r >= TARGET_RATIO
    return {
        "pairs": len(pairs),
        "questions": len({(p.sample_id, p.qa_index) for p in pairs}),
        "graphs": graph_info,
        "subsets": out_subsets,
        "target": target,
    }


# --- ablation arms ----------------------------------------------------------------------------------


def arm_tag(tag: str, arm: str) -> str:
    return f"{tag}.{arm}"


def arm_note_id(arm: str, note_id: str) -> str:
    """The id of a note's copy in an arm scope (note ids are global in the database)."""
    nid = f"{_ARM_CODES[arm]}-{note_id}"
    return nid if len(nid) <= 128 else f"{_ARM_CODES[arm]}-h{hashlib.sha256(note_id.encode()).hexdigest()[:40]}"


def evolution_versions(versions: Sequence[NoteVersion], note_ids: set[str]) -> list[NoteVersion]:
    """The versions an evolution replaced (changed by a note of the scope), oldest first; updates,
    repairs and other changes name no note."""
    return sorted((v for v in versions if v.changed_by in note_ids), key=lambda v: v.version)


def strongest_targets(records: Sequence[Mapping[str, Any]]) -> dict[str, set[str]]:
    """Per note, the neighbours of its strongest LLM link (the highest strength; all of them on a tie,
    where the add itself took the nearer candidate, which the records no longer show)."""
    out: dict[str, set[str]] = {}
    for r in records:
        scored = [x for x in r.get("links") or [] if not is_turn_link(x) and x.get("strength") is not None]
        if scored:
            best = max(float(x["strength"]) for x in scored)
            out[r["id"]] = {x["target_id"] for x in scored if float(x["strength"]) == best}
    return out


def kept_evolution(
    record: Mapping[str, Any], versions: Sequence[NoteVersion], strongest: Mapping[str, set[str]]
) -> dict[str, Any] | None:
    """A note's values after the last evolution that came from an add's strongest link (None: no
    evolution of it is kept). ``versions``: all its versions, oldest first; each holds the values its
    change replaced, so the values after a change are the next version's, or the note's own."""
    # ``strongest`` names only notes of the export: updates, repairs and rollbacks never match
    kept = [i for i, v in enumerate(versions) if v.changed_by and record["id"] in strongest.get(v.changed_by, ())]
    if not kept:
        return None
    i = kept[-1]
    after: Mapping[str, Any] = versions[i + 1].model_dump() if i + 1 < len(versions) else record
    return {
        "context": after["context"],
        "tags": list(after["tags"]),
        "keywords": list(after["keywords"]),
        "version": int(after["version"]),
    }


def arm_records(
    records: Sequence[Mapping[str, Any]],
    arm: str,
    originals: Mapping[str, NoteVersion],
    histories: Mapping[str, Sequence[NoteVersion]] | None = None,
) -> list[dict[str, Any]]:
    """Export records of one arm: ids renamed for the arm; without links, only the turn links kept;
    without evolution, each evolved note back to ``originals[id]`` (its values before its first
    evolution) and its embedding dropped so that the import embeds the restored text; with the
    strongest link's evolution only, each evolved note at its values after the last evolution an add
    made through its strongest link (``histories``: every version of the evolved notes, oldest first),
    keeping the ingest's search vector (evolution_reembed off: the one of the original values), else
    back to its original values; without enrichment, keywords, tags and context emptied and the
    embedding dropped (content alone); without updates, no supersession or conflict (derivations kept).
    """
    links_on, evolution_on, enrichment_on, updates_on, *_ = ARMS[arm]
    strongest = strongest_targets(records) if evolution_on == STRONGEST else {}
    out: list[dict[str, Any]] = []
    for r in records:
        rec = dict(r)
        rec["id"] = arm_note_id(arm, r["id"])
        rec["links"] = [
            {
                **link,
                "target_id": arm_note_id(arm, link["target_id"]),
                **({"caused_by": arm_note_id(arm, link["caused_by"])} if link.get("caused_by") else {}),
            }
            for link in r.get("links") or []
            if links_on or is_turn_link(link)
        ]
        rec["updates"] = [
            {
                **u,
                "target_id": arm_note_id(arm, u["target_id"]),
                **({"caused_by": arm_note_id(arm, u["caused_by"])} if u.get("caused_by") else {}),
            }
            for u in r.get("updates") or []
            if updates_on or u["type"] == "DERIVED_FROM"
        ]
        kept = (
            kept_evolution(r, (histories or {}).get(r["id"], ()), strongest)
            if evolution_on == STRONGEST and r["id"] in originals
            else None
        )
        if kept is not None:
            rec.update(kept)
        elif evolution_on is not True and r["id"] in originals:
            v = originals[r["id"]]
            rec.update(context=v.context, tags=list(v.tags), keywords=list(v.keywords), version=v.version)
            rec.pop("embedding", None)
        if not enrichment_on:
            rec.update(context="", tags=[], keywords=[])
            rec.pop("embedding", None)
        out.append(rec)
    return out


def lend_link_words(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each note's keywords lent to the earlier notes its LLM links point to, by the service's rule
    (``lent_keywords``), in record order as the adds lent them: evolution by words, after the fact."""
    by_id = {r["id"]: r for r in records}
    own = {r["id"]: list(r.get("keywords") or []) for r in records}  # lent words are not passed on
    for r in records:
        for link in r.get("links") or []:
            target = by_id.get(link["target_id"])
            if target is None or is_turn_link(link):
                continue
            current = target.get("keywords") or []
            target["keywords"] = [*current, *lent_keywords(current, own[r["id"]])]
    return records


async def embed_missing(
    svc: AsyncMemoryService, records: Sequence[dict[str, Any]], scope: Scope, variant: str | None = None
) -> None:
    """The embedding each record without one gets, set on it now: of the text ``variant`` (default:
    the setting, as the import would embed it)."""
    bare = [r for r in records if not r.get("embedding")]
    if bare:
        variant = variant or svc.settings.embed_text_variant
        vectors = await svc.embedder.aembed_documents([embed_text(_note_of(r, scope), variant) for r in bare])
        for r, v in zip(bare, vectors, strict=True):
            r["embedding"] = list(v)


def _note_of(record: Mapping[str, Any], scope: Scope) -> Note:
    fields = {k: v for k, v in record.items() if k not in ("embedding", "links") and v is not None}
    return Note.model_validate({**fields, "scope": scope})


async def check_embeddings(
    svc: AsyncMemoryService, records: Sequence[Mapping[str, Any]], scope: Scope, *, at_most: int = 8
) -> float | None:
    """Embed a few never-changed notes as the import would and compare with their stored vectors:
    a restored note must be embedded as the ingest embedded (same embedder, same embedded text)."""
    plain = [r for r in records if int(r.get("version") or 1) == 1 and r.get("embedding")][:at_most]
    if not plain:
        return None
    variant = svc.settings.embed_text_variant
    fresh = await svc.embedder.aembed_documents([embed_text(_note_of(r, scope), variant) for r in plain])
    cosines = []
    for r, v in zip(plain, fresh, strict=True):
        a, b = np.asarray(r["embedding"], dtype=np.float64), np.asarray(v, dtype=np.float64)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        cosines.append(float(a @ b) / max(norm, 1e-12))
    worst = min(cosines)
    if worst < EMBEDDING_CHECK_MIN_COSINE:
        raise InvalidInputError(
            f"{scope}: stored embeddings differ from what this configuration makes (cosine {worst:.4f}); "
            f"run with the embedder and GRAPHMEM_EMBED_TEXT_VARIANT of the ingest (now {variant!r}), "
            "otherwise the restored notes of the no-evolution arms would be embedded differently"
        )
    return worst


async def originals_of(
    svc: AsyncMemoryService, records: Sequence[Mapping[str, Any]], scope: Scope
) -> tuple[dict[str, NoteVersion], dict[str, list[NoteVersion]], dict[str, int]]:
    """Per evolved note, the version holding its values before its first evolution, and all its
    versions oldest first; and counts."""
    ids = {r["id"] for r in records}
    originals: dict[str, NoteVersion] = {}
    histories: dict[str, list[NoteVersion]] = {}
    evolutions = other = 0
    for r in records:
        if int(r.get("version") or 1) <= 1:
            continue
        versions = sorted(await svc.history(r["id"], scope), key=lambda v: v.version)
        evolved = evolution_versions(versions, ids)
        evolutions += len(evolved)
        other += len(versions) - len(evolved)
        if evolved:
            originals[r["id"]], histories[r["id"]] = evolved[0], versions
    counts = {"evolved_notes": len(originals), "evolutions": evolutions, "other_versions": other}
    return originals, histories, counts


async def build_arms(
    svc: AsyncMemoryService, records: Sequence[Mapping[str, Any]], conv: Conversation, cfg: LinksConfig
) -> dict[str, Any]:
    """(Re)build the arm scopes of one conversation; returns what each holds."""
    source = scope_for(cfg.reuse_tag, conv.sample_id)
    originals, histories, counts = await originals_of(svc, records, source)
    info: dict[str, Any] = {**counts, "embedding_check_min_cosine": None}
    if originals or any(not spec.enrichment for spec in ARMS.values()):  # some arm re-embeds notes
        info["embedding_check_min_cosine"] = await check_embeddings(svc, records, source)
    bq = BenchQueries(svc.store)
    scopes = {arm: scope_for(arm_tag(cfg.reuse_tag, arm), conv.sample_id) for arm in ARMS}
    if len(set(scopes.values())) != len(ARMS) or source in scopes.values():
        raise InvalidInputError(f"tag {cfg.reuse_tag!r} is too long to name the arm scopes apart")
    for arm, scope in scopes.items():
        await bq.delete_scope(scope)  # always rebuilt: the source may have grown since
        recs = arm_records(records, arm, originals, histories)
        if ARMS[arm].embed_variant:  # enrichment kept for the full-text index and the answer
            for r in recs:
                r.pop("embedding", None)
            await embed_missing(svc, recs, scope, ARMS[arm].embed_variant)
        if ARMS[arm].link_words:  # lent words reach the full-text index, never the search vector
            await embed_missing(svc, recs, scope)
            lend_link_words(recs)
        await svc.import_notes(recs, scope)
        stored = await svc.count(scope)
        if stored != len(recs):
            raise InvalidInputError(f"arm {scope}: {stored} notes stored of {len(recs)}")
        info[arm] = {
            "scope": str(scope),
            "tag": arm_tag(cfg.reuse_tag, arm),
            "notes": stored,
            "links": sum(len(r["links"]) for r in recs),
            "updates": sum(len(r["updates"]) for r in recs),
            "reverted": sum(1 for r in recs if "embedding" not in r),
            # notes holding evolved values in this arm
            "evolved": sum(
                1
                for src, r in zip(records, recs, strict=True)
                if src["id"] in originals and r["context"] != originals[src["id"]].context
            ),
        }
    return info


# --- the run ----------------------------------------------------------------------------------------


async def run_links_eval(
    svc: AsyncMemoryService,
    conversations: Sequence[Conversation],
    cfg: LinksConfig,
    *,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Connectivity and/or the ablation over the conversations whose scope holds notes (JSON-ready)."""
    started = time.perf_counter()
    s = svc.settings
    mode = cfg.mode or s.search_mode
    k = cfg.k or s.answer_k
    graphs: list[_ConvGraph] = []
    conv_info: dict[str, Any] = {}
    parts: dict[str, list[Any]] = {arm: [] for arm in ARMS}
    for conv in conversations:
        scope = scope_for(cfg.reuse_tag, conv.sample_id)
        rejudged = await _rejudge(svc, scope) if cfg.rejudge_updates else None
        records = await svc.export_notes(scope)
        if not records:
            conv_info[conv.sample_id] = {"scope": str(scope), "notes": 0, "skipped": "no notes in this scope"}
            continue
        dia_to_note = turn_notes(records)
        sessions = cfg.sessions or stored_sessions(conv, dia_to_note)
        expected = conv.dia_ids(sessions)
        info: dict[str, Any] = {
            "scope": str(scope),
            "notes": len(records),
            "sessions": sessions,
            "turns_missing": len(expected - set(dia_to_note)),
            **({"rejudged_updates": rejudged} if rejudged else {}),
        }
        conv_info[conv.sample_id] = info
        if cfg.connectivity:
            llm = link_edges(records, turn=False)
            graphs.append(
                _ConvGraph(
                    sample_id=conv.sample_id,
                    dia_to_note=dia_to_note,
                    nodes=[r["id"] for r in records],
                    llm=llm,
                    turn=link_edges(records, turn=True),
                    knn=nearest_neighbour_edges(records, llm),
                    pairs=stored_evidence_pairs(conv, dia_to_note, cfg.categories, sessions),
                )
            )
        if cfg.ablation:
            info["arms"] = await build_arms(svc, records, conv, cfg)
            for arm in ARMS:
                rcfg = RetrievalConfig(
                    ks=(k,),
                    modes=(mode,),
                    sessions=sessions,
                    categories=cfg.categories,
                    reuse_tag=arm_tag(cfg.reuse_tag, arm),
                    max_questions=cfg.max_questions,
                    token_budget=cfg.token_budget,
                    show_context=ARMS[arm].context,
                )
                accs, rinfo = await evaluate_conversation(svc, conv, rcfg, progress=progress)
                info["arms"][arm]["questions"] = rinfo.get("questions", 0)
                info["arms"][arm]["links_in_scope"] = rinfo.get("links_in_scope")
                if accs:
                    parts[arm].append(accs)
            if cfg.drop_arms:
                bq = BenchQueries(svc.store)
                for arm in ARMS:
                    await bq.delete_scope(scope_for(arm_tag(cfg.reuse_tag, arm), conv.sample_id))
    used = [sid for sid, i in conv_info.items() if i.get("notes")]
    if not used:
        raise InvalidInputError(
            f"no notes in any scope locomo-{cfg.reuse_tag}-<sample>: run `graphmem eval locomo --ingest-only "
            f"--tag {cfg.reuse_tag}` (or pass the tag it derived) first"
        )
    result: dict[str, Any] = {
        "kind": "links",
        "config": {
            **asdict(cfg),
            "search_mode": mode,
            "k": k,
            "context_token_budget": cfg.token_budget or s.context_token_budget,
            "links_per_hit": s.links_per_hit,
            "answer_links_per_hit": s.resolved_answer_links_per_hit,
            "answer_fill_links_per_hit": s.answer_fill_links_per_hit,
            "embed_text_variant": s.embed_text_variant,
            "answer_shows_context": s.answer_shows_context,
            "embedder": s.embedder,
            "follows_reason": FOLLOWS_REASON,
        },
        "conversations": conv_info,
    }
    if cfg.connectivity:
        result["connectivity"] = connectivity(graphs, cfg, progress)
    if cfg.ablation:
        result["ablation"] = ablation_summary(parts, mode, k, cfg)
    result["seconds"] = time.perf_counter() - started
    return result


async def _rejudge(svc: AsyncMemoryService, scope: Scope) -> dict[str, Any] | None:
    """The scope's supersessions and conflicts judged again (a gate change measured on a kept ingest)."""
    if not await svc.count(scope):
        return None
    report = await svc.rejudge_updates(scope)
    return {
        "notes_judged": len(report.items),
        "supersessions": sum(len(it.superseded) for it in report.items),
        "conflicts": sum(len(it.conflicts) for it in report.items),
        "knock_on": sum(len(it.knock_on) for it in report.items),
        "llm_calls": report.usage.llm_calls,
        "tokens": report.usage.input_tokens + report.usage.output_tokens,
        "seconds": round(report.seconds, 1),
    }


def ablation_summary(parts: Mapping[str, list[Any]], mode: str, k: int, cfg: LinksConfig) -> dict[str, Any]:
    merged = {arm: merge(p, (mode,), (k,)) for arm, p in parts.items()}
    arms = {arm: {**ARMS[arm]._asdict(), **summarise(m, (k,))[mode]} for arm, m in merged.items()}
    metric = f"budget_recall@{k}"
    full = merged["full"][mode][k]

    def by_category(a: Any, b: Any) -> dict[str, Any]:
        return {
            str(cat): paired_bootstrap(
                [x for x, c in zip(a.budget_recall, a.category, strict=True) if c == cat],
                [x for x, c in zip(b.budget_recall, b.category, strict=True) if c == cat],
                reps=cfg.bootstrap,
                seed=cfg.seed,
            )
            for cat in sorted(set(a.category))
        }

    deltas: dict[str, Any] = {}
    for arm, m in merged.items():
        if arm == "full":
            continue
        acc = m[mode][k]
        deltas[arm] = {
            "full_minus_arm": paired_bootstrap(
                full.budget_recall, acc.budget_recall, reps=cfg.bootstrap, seed=cfg.seed
            ),
            "all_evidence_full_minus_arm": paired_bootstrap(
                full.budget_hit, acc.budget_hit, reps=cfg.bootstrap, seed=cfg.seed
            ),
            "by_category": by_category(full, acc),
        }
    pairs: dict[str, Any] = {}
    for a, b in ARM_PAIRS:
        if a in merged and b in merged:
            x, y = merged[a][mode][k], merged[b][mode][k]
            pairs[f"{a} - {b}"] = {
                "arm_minus_other": paired_bootstrap(
                    x.budget_recall, y.budget_recall, reps=cfg.bootstrap, seed=cfg.seed
                ),
                "by_category": by_category(x, y),
            }
    return {
        "mode": mode,
        "k": k,
        "metric": metric,
        "questions": len(full.recall),
        "arms": arms,
        "deltas": deltas,
        "pairs": pairs,
    }
