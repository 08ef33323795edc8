"""The Neo4j jars: a generated pom, fetched once with Maven into ``<home>/neo4j/dist/<version>/``.

Maven Central has no server tarball (``neo4j-community-standalone`` is pom-only), but the server
is a set of jars: ``org.neo4j:neo4j`` holds the entry point and pulls in ``neo4j-server``; the
Browser is ``org.neo4j.client:neo4j-browser``. A 2026 server serves the newest
``neo4j-browser*.zip`` of its web folder (how its tarball ships the Browser; those zips are not
on Maven Central) and otherwise the Browser jar on its classpath: both lines serve this jar's.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from graphmem.errors import LocalServiceError
from graphmem.local.process import tail

_DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_MANIFEST = ".graphmem-complete.json"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MVN_BOILERPLATE = re.compile(r"^\[ERROR\]\s*$|-e switch|-X switch|^\[ERROR\] \[Help|more information about")


def render_pom(version: str, browser_version: str) -> str:
    return f"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <!-- Written by graphmem: the jars of Neo4j Community {version} plus Neo4j Browser. -->
  <modelVersion>4.0.0</modelVersion>
  <groupId>graphmem.local</groupId>
  <artifactId>neo4j-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.neo4j</groupId><artifactId>neo4j</artifactId><version>{version}</version></dependency>
    <dependency><groupId>org.neo4j.client</groupId><artifactId>neo4j-browser</artifactId><version>{browser_version}</version></dependency>
  </dependencies>
</project>
"""


class Neo4jDist:
    """One Neo4j version's jars (``lib/``), ``plugins/``, pom and fetch log under ``root``."""

    def __init__(self, root: Path, version: str, browser_version: str, report: Callable[[str], None]) -> None:
        self.root = root
        self.version = version
        self.browser_version = browser_version
        self._report = report

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    @property
    def plugins(self) -> Path:
        return self.root / "plugins"

    def complete(self) -> bool:
        """lib/ holds every jar of the last successful fetch for this exact pom."""
        try:
            manifest = json.loads((self.lib / _MANIFEST).read_text())
        except (OSError, ValueError):
            return False
        if manifest.get("pom_sha256") != _sha256(self._pom_text()):
            return False
        jars: dict[str, int] = manifest.get("jars", {})
        return bool(jars) and all(
            (self.lib / name).is_file() and (self.lib / name).stat().st_size == size for name, size in jars.items()
        )

    def _pom_text(self) -> str:
        return render_pom(self.version, self.browser_version)

    def ensure(self) -> bool:
        """Fetch the jars with Maven unless lib/ is complete; return True when it fetched."""
        if self.complete():
            return False
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LocalServiceError(
                "`mvn` (Apache Maven 3.6+) is not on PATH; it is needed once, to fetch the Neo4j jars "
                "from Maven Central. Install it (Debian/Ubuntu: apt-get install maven) and retry"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        pom = self.root / "pom.xml"
        pom.write_text(self._pom_text())
        partial = self.root / "lib.partial"
        shutil.rmtree(partial, ignore_errors=True)
        log = self.root / "fetch.log"
        self._report(f"Fetching Neo4j {self.version} jars with Maven (once, ~140 MB)")
        cmd = [
            mvn, "-B", "-q", "-f", str(pom), f"{_DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={partial}", "-DincludeScope=runtime", "-Dmdep.prependGroupId=true",
        ]  # fmt: skip
        with log.open("wb") as out:
            code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if code != 0:
            lines = [_ANSI.sub("", ln) for ln in tail(log, 40).splitlines()]
            errors = [ln for ln in lines if ln.startswith("[ERROR]") and not _MVN_BOILERPLATE.search(ln)]
            hint = ""
            if any("not found" in ln or "Could not find" in ln for ln in errors):
                hint = (
                    f" Check that GRAPHMEM_NEO4J_VERSION={self.version} and GRAPHMEM_NEO4J_BROWSER_VERSION="
                    f"{self.browser_version} exist on Maven Central (5.26.30 and 5.24.0 do)."
                )
            detail = "\n".join(errors[:2]) or tail(log, 10)
            raise LocalServiceError(f"mvn could not fetch the Neo4j jars (exit {code}, log {log}).{hint}\n{detail}")
        jars = {p.name: p.stat().st_size for p in partial.glob("*.jar")}
        if not any(name.startswith("org.neo4j.app.neo4j-server-") for name in jars):
            raise LocalServiceError(f"the fetched jars lack org.neo4j.app:neo4j-server (see {log})")
        (partial / _MANIFEST).write_text(json.dumps({"pom_sha256": _sha256(self._pom_text()), "jars": jars}))
        # Swap in atomically so an interrupted fetch never leaves a half lib/ that looks complete.
        shutil.rmtree(self.lib, ignore_errors=True)
        partial.rename(self.lib)
        self.plugins.mkdir(exist_ok=True)
        return True


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
