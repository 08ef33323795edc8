"""The two Neo4j server lines the local manager runs: what each needs (Java, main class, JVM flags,
neo4j.conf settings).

``5.26`` is the 5.x LTS (supported to June 2028); ``2026`` is the calendar line from 2026.08.1 on
(2026.08.0 has a known query bug; SEARCH with in-index filters needs 2026.02+, ``IN`` 2026.06+).
Everything that differs by line lives in this table, so the manager never compares version
strings elsewhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

LineName = Literal["5.26", "2026"]

# The `server.jvm.additional` defaults that `bin/neo4j` of 5.26 would add (we start plain `java`).
_COMMON_FLAGS = (
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+UnlockExperimentalVMOptions",
    "-XX:+TrustFinalNonStaticFields",
    "-XX:+DisableExplicitGC",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.tls.ephemeralDHKeySize=2048",
    "-Djdk.tls.rejectClientInitiatedRenegotiation=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
    "-Dlog4j2.disable.jmx=true",
    "-Dfile.encoding=UTF-8",
)

# 2026.x adds these to every neo4j.conf it migrates (ConfigFileMigrator of 2026.08.1): without the
# property the shaded Lucene 9 of the vector index refuses its vectorised (SIMD) code on Java 25.
# The Vector API module itself is what 2026.08.1 turns on by default; a plain `java` start must ask
# for it. Measured effect: docs/neo4j-2026.md (JVM flags).
_VECTOR_FLAGS = (
    "--add-modules=jdk.incubator.vector",
    "-Dorg.neo4j.shaded.lucene9.vectorization.upperJavaFeatureVersion=25",
)

# How the 2026 vector index keeps its Lucene segments. A search walks the HNSW graph of every segment,
# so its cost grows with their number, and Neo4j's defaults keep many: a log-size merge policy that
# merges only 50 segments of a size at a time (100 while an index is populated). 100,000 notes gave
# 35-40 segments, and graphmem's vector search took 1.55x as long as with the 7 that a tiered policy
# with 2 segments a tier keeps as notes arrive (docs/neo4j-2026.md, "Index segments"); a population
# (index creation, `graphmem migrate-index`) ends in one. Internal settings: the 2026.08.1 server
# accepts them under strict validation (the line's integration test starts one); 5.26 has only the
# merge factors, and is left as it was.
_VECTOR_INDEX_CONF = (
    "internal.dbms.index.vector.merge_policy=TIERED",
    "internal.dbms.index.vector.segments_per_tiers=2",
    "internal.dbms.index.vector.post_population_compaction=FULL",
)


@dataclass(frozen=True)
class ServerLine:
    name: LineName
    pinned: str  # the version graphmem tests and fetches by default
    java: tuple[int, ...]  # Java majors Neo4j supports on this line, preferred (newest) last
    main_class: str
    instance: str  # default server folder under <home>/neo4j/: one per line, never shared
    jvm_flags: tuple[str, ...]
    conf: tuple[str, ...] = ()  # neo4j.conf lines of this line only

    @property
    def java_text(self) -> str:
        return " or ".join(str(major) for major in self.java)


LINES: dict[LineName, ServerLine] = {
    "5.26": ServerLine(
        name="5.26",
        pinned="5.26.30",
        java=(17, 21),
        main_class="org.neo4j.server.CommunityEntryPoint",
        instance="server",  # the folder graphmem used before it knew two lines: existing data stays put
        jvm_flags=_COMMON_FLAGS,
    ),
    "2026": ServerLine(
        name="2026",
        pinned="2026.08.1",
        java=(21, 25),
        main_class="org.neo4j.server.Neo4jCommunity",
        # A 2026 server upgrades a 5.26 store in place, and 5.26 cannot open it again: separate folders.
        instance="server-2026",
        jvm_flags=(*_COMMON_FLAGS, *_VECTOR_FLAGS),
        conf=_VECTOR_INDEX_CONF,
    ),
}

_SEMVER = re.compile(r"^5\.(\d+)\.(\d+)$")
_CALVER = re.compile(r"^(20\d\d)\.(\d\d)\.(\d+)$")
MIN_CALVER = (2026, 8, 1)


def line_of(version: str) -> ServerLine:
    """The line a Neo4j version belongs to; ValueError naming what is supported otherwise."""
    if match := _SEMVER.match(version):
        if int(match.group(1)) != 26:
            raise ValueError(f"Neo4j {version} is not supported: use the 5.26 LTS line (5.26.x) or 2026.08.1+")
        return LINES["5.26"]
    if match := _CALVER.match(version):
        if tuple(int(g) for g in match.groups()) < MIN_CALVER:
            reason = " (2026.08.0 has a known query bug)" if version == "2026.08.0" else ""
            raise ValueError(f"Neo4j {version} is not supported{reason}: the calendar line needs 2026.08.1 or newer")
        return LINES["2026"]
    raise ValueError(f"{version!r} is not a Neo4j version (5.26.x or YYYY.MM.P such as 2026.08.1)")
