"""Research probes for docs/neo4j-2026.md: in-index scope filtering, recall, latency floor, migration.

Not part of graphmem: a bare driver against the two local servers, with its Cypher in
tools/research/cypher/ (named files, parameterised, as everywhere in the project).

    P=".venv/bin/python tools/research/probe.py"
    $P load   --uri bolt://127.0.0.1:7704 --data $GRAPHMEM_HOME/../research --n 100000
    $P index  --uri bolt://127.0.0.1:7704 --line 2026 --quant BINARY --expansion 3
    $P recall --uri bolt://127.0.0.1:7704 --line 2026 --data ... --n 100000 --queries 200 --out r.json
    $P floor  --uri bolt://127.0.0.1:7704 --repeat 2000

Tenants: 100; t000 holds half of the notes, t001 1 % (the searched small tenant), t002..t099
share the rest. The exact in-scope top-10 (NumPy, float64 cosine over the stored vectors) is the
reference of recall@10. Timings are client round trips through `execute_query` (the Rust
packstream extension loaded), after a warm-up; the machine's load average is recorded with them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from neo4j import Driver, GraphDatabase

CYPHER = Path(__file__).with_name("cypher")
SCOPE = {"agent_id": "default", "run_id": "default"}
BIG, SMALL = "t000", "t001"


def q(name: str) -> str:
    return (CYPHER / f"{name}.cypher").read_text()


def run(driver: Driver, name: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(q(name), params, database_="neo4j")
    return [r.data() for r in records]


def tenants(n: int, seed: int = 11) -> np.ndarray:
    """Tenant index per note: 50 % t000, 1 % t001, the rest spread over t002..t099."""
    rng = np.random.default_rng(seed)
    owner = np.empty(n, dtype=np.int32)
    order = rng.permutation(n)
    big, small = n // 2, n // 100
    owner[order[:big]] = 0
    owner[order[big : big + small]] = 1
    rest = order[big + small :]
    owner[rest] = 2 + np.arange(len(rest)) % 98
    return owner


def tenant_name(i: int) -> str:
    return f"t{i:03d}"


def load_corpus(data: Path, n: int, random: bool = False) -> tuple[np.ndarray, list[str]]:
    if random:  # the hard case: uniformly random unit vectors (no text)
        rnd = np.random.default_rng(3).normal(size=(n, 384))
        return rnd / np.linalg.norm(rnd, axis=1, keepdims=True), [""] * n
    for _ in range(20):  # corpus.py may be rewriting its partial file right now
        try:
            done = data / "notes.npy"
            vecs = np.load(done if done.exists() else data / "notes.partial.npy")
            break
        except ValueError:
            time.sleep(3)
    texts = json.loads((data / "notes.json").read_text())
    if len(vecs) < n:
        sys.exit(f"only {len(vecs)} notes embedded so far; ask for --n {len(vecs)} or wait")
    vecs = vecs[:n].astype(np.float64)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs, texts[:n]


def cmd_load(args: argparse.Namespace) -> None:
    """Load notes [--rows-from, --rows-to) of an --n note layout (tenants depend on --n only), so a
    corpus still being embedded can be loaded in parts."""
    end = args.rows_to or args.n
    vecs, texts = load_corpus(args.data, end, args.random)
    owner = tenants(args.n)
    with GraphDatabase.driver(args.uri, notifications_min_severity="OFF") as driver:
        have = run(driver, "count")[0]["notes"]
        if have != args.rows_from:
            sys.exit(f"the database holds {have} notes, not --rows-from {args.rows_from}: `probe.py wipe` first?")
        run(driver, "scope_index")
        t0 = time.monotonic()
        for i in range(args.rows_from, end, 2000):
            rows = [
                {
                    "id": f"n{j:06d}",
                    "user_id": tenant_name(int(owner[j])),
                    "content": texts[j],
                    "embedding": vecs[j].tolist(),
                }
                for j in range(i, min(i + 2000, end))
            ]
            run(driver, "load_notes", rows=rows)
        print(
            json.dumps(
                {
                    "loaded": end - args.rows_from,
                    "seconds": round(time.monotonic() - t0, 1),
                    "load_avg": os.getloadavg(),
                }
            )
        )


def cmd_wipe(args: argparse.Namespace) -> None:
    with GraphDatabase.driver(args.uri, notifications_min_severity="OFF") as driver:
        run(driver, "drop_vector_index")
        while run(driver, "delete_batch", batch=10000)[0]["deleted"]:
            pass


def cmd_index(args: argparse.Namespace) -> None:
    with GraphDatabase.driver(args.uri, notifications_min_severity="OFF") as driver:
        run(driver, "drop_vector_index")
        t0 = time.monotonic()
        if args.line == "2026":
            run(driver, "vector_index_2026", quant_type=args.quant, expansion=args.expansion, m=args.m, ef=args.ef)
        elif args.line == "5.26-on-2026":
            run(driver, "vector_index_526_on_2026")
        else:
            run(driver, "vector_index_526", quant=args.quant != "NONE", m=args.m, ef=args.ef)
        run(driver, "await", seconds=3600)
        info = run(driver, "show_vector_index")
        print(
            json.dumps(
                {"seconds": round(time.monotonic() - t0, 1), "load_avg": os.getloadavg(), "index": info}, default=str
            )
        )


def exact_topk(vecs: np.ndarray, members: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    # every note: no copy of the (at 1M, 3 GB) matrix per query
    scores = vecs @ query if len(members) == len(vecs) else vecs[members] @ query
    best = np.argsort(-scores, kind="stable")[:k]
    return [f"n{int(members[i]):06d}" for i in best]


def timed(driver: Driver, name: str, **params: Any) -> tuple[float, list[dict[str, Any]]]:
    t0 = time.perf_counter()
    rows = run(driver, name, **params)
    return (time.perf_counter() - t0) * 1000, rows


def grow_post_filter(driver: Driver, emb: list[float], k: int, scope: dict[str, str]) -> tuple[float, list[str], int]:
    """graphmem's 5.26 search: fetch k*4, grow x4 while short, exact scan past 4,096 (store/note_search.py)."""
    total, fetch_k = 0.0, k * 4
    while fetch_k <= 4096:
        ms, rows = timed(driver, "query_nodes_post_filter", embedding=emb, fetch_k=fetch_k, k=k, **scope)
        total += ms
        if len(rows[0]["ids"]) >= k or rows[0]["fetched"] < fetch_k:
            return total, rows[0]["ids"], fetch_k
        fetch_k *= 4
    ms, rows = timed(driver, "exact_scan", embedding=emb, k=k, **scope)
    return total + ms, [r["id"] for r in rows], -1


def summary(ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    return {"p50": round(statistics.median(ms), 2), "p95": round(ms[int(0.95 * (len(ms) - 1))], 2)}


def cmd_recall(args: argparse.Namespace) -> None:
    vecs, _ = load_corpus(args.data, args.n, args.random)
    owner = tenants(args.n)
    queries = np.load(args.data / "queries.npy").astype(np.float64)
    if args.random:
        queries = np.random.default_rng(4).normal(size=(len(queries), 384))
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    rng = np.random.default_rng(5)
    picked = queries[rng.choice(len(queries), size=min(args.queries, len(queries)), replace=False)]
    methods: list[str] = args.methods.split(",")
    out: dict[str, Any] = {"uri": args.uri, "line": args.line, "n": args.n, "queries": len(picked), "k": args.k}
    out["data"] = "random unit vectors" if args.random else "MiniLM embeddings of LoCoMo text"
    out["load_avg_start"] = os.getloadavg()
    with GraphDatabase.driver(args.uri, notifications_min_severity="OFF") as driver:
        out["index"] = run(driver, "show_vector_index")
        for tenant in args.tenants.split(","):
            # "all": the whole index as one scope (the unfiltered method's recall, the 1M / 100k ratio)
            members = np.arange(args.n) if tenant == "all" else np.flatnonzero(owner == int(tenant[1:]))
            scope = {"user_id": tenant, **SCOPE}
            truth = [exact_topk(vecs, members, qv, args.k) for qv in picked]
            res: dict[str, Any] = {"size": len(members)}
            for method in methods:
                lat: list[float] = []
                rec: list[float] = []
                extra: list[int] = []
                cpu0 = 0.0
                for i, qv in enumerate([*picked[:10], *picked]):  # the first 10: warm-up, not counted
                    if i == 10:
                        cpu0 = _cpu_ms(args.pid)
                    emb = qv.tolist()
                    if method.startswith("search_x"):
                        mult = int(method.removeprefix("search_x"))
                        ms, rows = timed(
                            driver, "search_in_index", embedding=emb, fetch_k=args.k * mult, k=args.k, **scope
                        )
                        ids = [r["id"] for r in rows]
                    elif method == "post_filter":
                        ms, ids, fetch = grow_post_filter(driver, emb, args.k, scope)
                        if i >= 10:
                            extra.append(fetch)
                    elif method == "exact_scan":
                        ms, rows = timed(driver, "exact_scan", embedding=emb, k=args.k, **scope)
                        ids = [r["id"] for r in rows]
                    elif method.startswith("unfiltered"):  # unfiltered_x3: LIMIT 3k, the best k kept
                        mult = int(method.removeprefix("unfiltered").removeprefix("_x") or 1)
                        ms, rows = timed(driver, "search_unfiltered", embedding=emb, k=args.k * mult)
                        best = sorted(rows, key=lambda r: -r["score"])[: args.k]
                        ids = [r["id"] for r in best] if tenant == "all" else []
                    else:
                        sys.exit(f"unknown method {method}")
                    if i >= 10:
                        lat.append(ms)
                        want = truth[i - 10]
                        rec.append(len(set(ids) & set(want)) / len(want))
                entry: dict[str, Any] = {**summary(lat), "recall@10": round(float(np.mean(rec)), 4)}
                if args.pid:  # server CPU per query: far less sensitive to the machine's load than wall time
                    entry["server_cpu_ms"] = round((_cpu_ms(args.pid) - cpu0) / len(lat), 2)
                entry["recall_min"] = round(float(np.min(rec)), 2)
                if extra:
                    entry["final_fetch_k"] = {str(v): extra.count(v) for v in sorted(set(extra))}
                res[method] = entry
                print(tenant, method, entry, file=sys.stderr)
            out[tenant] = res
    out["load_avg_end"] = os.getloadavg()
    text = json.dumps(out, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


def _cpu_ms(pid: int | None) -> float:
    """CPU time (user + system) a process has used so far, in ms; 0 without a pid."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def cmd_floor(args: argparse.Namespace) -> None:
    """RETURN 1 through execute_query (a managed transaction: BEGIN, RUN+PULL, COMMIT) and through
    session.run (auto-commit: RUN+PULL). Besides wall time, the CPU time the server JVM and this
    client spend per query: on a loaded machine wall time mostly measures the queue for a core,
    CPU time much less so."""
    out: dict[str, Any] = {"uri": args.uri, "load_avg_start": os.getloadavg()}
    pid = args.pid
    with GraphDatabase.driver(args.uri, notifications_min_severity="OFF") as driver:
        out["server"] = driver.get_server_info().agent
        out["bolt"] = ".".join(map(str, driver.get_server_info().protocol_version))
        names = "return1,return1_c5,return1_c25" if args.queries.isdigit() else args.queries
        for name in names.split(","):
            text = q(name)
            with driver.session(database="neo4j") as session:
                for api in ("execute_query", "session.run"):

                    def call(api: str = api, text: str = text, session: Any = session) -> None:
                        if api == "execute_query":
                            driver.execute_query(text, database_="neo4j")
                        else:
                            session.run(text).consume()

                    for _ in range(200):
                        call()
                    ms: list[float] = []
                    s0, c0 = _cpu_ms(pid), time.process_time()
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        call()
                        ms.append((time.perf_counter() - t0) * 1000)
                    s1, c1 = _cpu_ms(pid), time.process_time()
                    entry = summary(ms) | {
                        "mean": round(statistics.fmean(ms), 3),
                        "server_cpu_ms": round((s1 - s0) / args.repeat, 3),
                        "client_cpu_ms": round((c1 - c0) * 1000 / args.repeat, 3),
                    }
                    out[f"{name} ({api})"] = entry
                    print(name, api, entry, file=sys.stderr)
    out["load_avg_end"] = os.getloadavg()
    print(json.dumps(out, indent=1))


def cmd_serve(args: argparse.Namespace) -> None:
    """Start the managed server of the environment's settings (GRAPHMEM_NEO4J_LINE, NEO4J_URI, ...)
    with a JVM flag variant, for the floor and vector-speed comparisons. JAVA_HOME picks the Java
    (when it fits the line). Stop it with `graphmem neo4j stop`."""
    from dataclasses import replace

    from graphmem.config import load_settings
    from graphmem.local.neo4j_server import LocalNeo4j

    server = LocalNeo4j(load_settings(), report=lambda msg: print(msg, file=sys.stderr))
    flags = tuple(f for f in server.line.jvm_flags if not (args.no_vector_flags and "vector" in f))
    server.line = replace(server.line, jvm_flags=flags + tuple(args.extra_flag or ()))
    # The line's neo4j.conf settings (or Neo4j's own defaults), then any extra lines, e.g. merge settings.
    conf = () if args.no_line_conf else server.line.conf
    server.line = replace(server.line, conf=conf + tuple(args.conf or ()))
    result = server.start(timeout=300)
    print(json.dumps({"pid": result.status.pid, "java": result.status.java, "flags": list(server.line.jvm_flags)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    serve = sub.add_parser("serve")
    serve.add_argument("--no-vector-flags", action="store_true", help="without the Vector API module and Lucene flag")
    serve.add_argument("--extra-flag", action="append", help="another JVM flag (repeatable)")
    serve.add_argument("--conf", action="append", help="another neo4j.conf line (repeatable)")
    serve.add_argument("--no-line-conf", action="store_true", help="without the line's neo4j.conf settings")
    for name in ("load", "wipe", "index", "recall", "floor"):
        p = sub.add_parser(name)
        p.add_argument("--uri", required=True)
        p.add_argument("--data", type=Path, default=Path(os.environ.get("GRAPHMEM_HOME", ".")).parent / "research")
        p.add_argument("--n", type=int, default=100_000)
        p.add_argument("--line", choices=("5.26", "2026", "5.26-on-2026"), default="5.26")
        p.add_argument("--quant", default="BINARY", help="2026: NONE/SCALAR/BINARY; 5.26: NONE or anything (on)")
        p.add_argument("--expansion", type=float, default=3.0)
        p.add_argument("--m", type=int, default=16)
        p.add_argument("--ef", type=int, default=100)
        p.add_argument("--queries", default="200")
        p.add_argument("--k", type=int, default=10)
        p.add_argument("--methods", default="post_filter,exact_scan")
        p.add_argument("--repeat", type=int, default=2000)
        p.add_argument("--out")
        p.add_argument("--rows-from", type=int, default=0, help="load: first row (the notes already loaded)")
        p.add_argument("--rows-to", type=int, default=0, help="load: end row (default --n)")
        p.add_argument(
            "--tenants",
            default=f"{SMALL},{BIG}",
            help="recall: tenants to search (t002..t099: 0.49 %%; all: every note)",
        )
        p.add_argument("--random", action="store_true", help="random unit vectors instead of the corpus")
        p.add_argument("--pid", type=int, help="floor: the server's pid, for its CPU time per query")
    args = ap.parse_args()
    if args.cmd == "serve":
        return cmd_serve(args)
    if args.cmd == "recall":
        args.queries = int(args.queries)
    {"load": cmd_load, "wipe": cmd_wipe, "index": cmd_index, "recall": cmd_recall, "floor": cmd_floor}[args.cmd](args)


if __name__ == "__main__":
    main()
