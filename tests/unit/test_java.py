"""Java discovery for the local Neo4j: order (JAVA_HOME, PATH, JVM folders), fit per line, messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.errors import LocalServiceError
from graphmem.local.java import JavaRuntime, candidates, find_java, install_hint, java_major, probe_major
from graphmem.local.neo4j_lines import LINES

DEBIAN_12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n'
UBUNTU_24 = 'NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="24.04"\n'


def jdk(root: Path, name: str, version: str | None, *, release: bool = True) -> Path:
    """A fake JDK home: an executable bin/java and (usually) the `release` file real JDKs carry."""
    home = root / name
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    # Without a release file the version comes from running `java -version`, as a real one prints it.
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2026-01-20' >&2\n")
    java.chmod(0o755)
    if release and version is not None:
        (home / "release").write_text(f'IMPLEMENTOR="Test"\nJAVA_VERSION="{version}"\n')
    return home


@pytest.mark.parametrize(
    ("output", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21" 2023-09-19', 21),
        ('java version "1.8.0_292"', 8),
        ("25.0.3", 25),
        ("no java here", None),
    ],
)
def test_java_major(output: str, major: int | None) -> None:
    assert java_major(output) == major


def test_probe_reads_the_release_file_or_runs_java(tmp_path: Path) -> None:
    assert probe_major(jdk(tmp_path, "a", "25.0.3") / "bin" / "java") == 25
    assert probe_major(jdk(tmp_path, "b", "21.0.5", release=False) / "bin" / "java") == 21


def test_candidates_follow_the_documented_order_once_each(tmp_path: Path) -> None:
    home = jdk(tmp_path, "home-jdk", "17.0.2")
    on_path = jdk(tmp_path, "path-jdk", "21.0.1")
    folders = tmp_path / "jvm"
    jdk(folders, "temurin-25", "25.0.3")
    (folders / "alias-of-path-jdk").symlink_to(on_path)  # the same JDK twice (Debian's java-1.17... links)
    env = {"JAVA_HOME": str(home), "PATH": str(on_path / "bin")}
    found = list(candidates(env, [str(folders / "*")]))
    assert [(p.parent.parent.name, src) for p, src in found] == [
        ("home-jdk", "JAVA_HOME"),
        ("path-jdk", "PATH"),
        ("temurin-25", str(folders / "*")),
    ]


def test_java_home_wins_when_it_fits(tmp_path: Path) -> None:
    home = jdk(tmp_path, "jdk-21", "21.0.4")
    jdk(tmp_path / "jvm", "jdk-25", "25.0.3")
    env = {"JAVA_HOME": str(home), "PATH": ""}
    chosen = find_java(LINES["2026"], "2026.08.1", env=env, jvm_globs=[str(tmp_path / "jvm" / "*")])
    assert (chosen.major, chosen.source) == (21, "JAVA_HOME")


def test_unfit_path_java_is_passed_over_for_a_folder_jdk_and_said(tmp_path: Path) -> None:
    """This machine's case: java 17 on PATH, Temurin 25 in /usr/lib/jvm, a 2026 server wanted."""
    path17 = jdk(tmp_path, "java-17", "17.0.15")
    folders = tmp_path / "jvm"
    jdk(folders, "java-21", "21.0.4")
    jdk(folders, "temurin-25", "25.0.3")
    messages: list[str] = []
    chosen = find_java(
        LINES["2026"],
        "2026.08.1",
        env={"PATH": str(path17 / "bin")},
        jvm_globs=[str(folders / "*")],
        report=messages.append,
    )
    assert chosen.major == 25 and chosen.java.parent.parent.name == "temurin-25"  # newest supported folder JDK
    assert messages == [f"PATH java is Java 17; Neo4j 2026.08.1 runs on Java 21 or 25: using {chosen.java} (Java 25)"]


def test_the_5_26_line_keeps_java_17_and_refuses_25(tmp_path: Path) -> None:
    path17 = jdk(tmp_path, "java-17", "17.0.15")
    folders = tmp_path / "jvm"
    jdk(folders, "temurin-25", "25.0.3")
    chosen = find_java(LINES["5.26"], "5.26.30", env={"PATH": str(path17 / "bin")}, jvm_globs=[str(folders / "*")])
    assert chosen.major == 17
    only25 = {"JAVA_HOME": str(folders / "temurin-25"), "PATH": ""}
    with pytest.raises(LocalServiceError, match=r"Neo4j 5\.26\.30 needs Java 17 or 21; Java found: .*Java 25"):
        find_java(LINES["5.26"], "5.26.30", env=only25, jvm_globs=[])


def test_no_java_at_all_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphmem.local.java.install_hint", lambda line: "apt-get install openjdk-21-jre-headless")
    with pytest.raises(LocalServiceError) as err:
        find_java(LINES["2026"], "2026.08.1", env={"PATH": str(tmp_path)}, jvm_globs=[])
    message = str(err.value)
    assert "Neo4j 2026.08.1 needs Java 21 or 25; Java found: none" in message
    assert "Install: apt-get install openjdk-21-jre-headless" in message and "JAVA_HOME" in message


@pytest.mark.parametrize(
    ("line", "os_release", "system", "expected"),
    [
        ("2026", DEBIAN_12, "Linux", "Debian 12 packages no Java 21 or 25; install Eclipse Temurin 25"),
        ("2026", DEBIAN_12, "Linux", "apt-get install temurin-25-jre"),
        ("5.26", DEBIAN_12, "Linux", "apt-get install openjdk-17-jre-headless"),
        ("2026", UBUNTU_24, "Linux", "apt-get install openjdk-21-jre-headless"),
        ("2026", 'ID="fedora"\nVERSION_ID=41\n', "Linux", "dnf install java-21-openjdk-headless"),
        ("2026", "", "Darwin", "brew install openjdk@25"),
        ("5.26", "ID=arch\n", "Linux", "a Java 17 or 21 runtime"),
    ],
)
def test_install_hint(line: str, os_release: str, system: str, expected: str) -> None:
    assert expected in install_hint(LINES[line], os_release=os_release, system=system)  # type: ignore[index]


def test_describe() -> None:
    assert (
        JavaRuntime(Path("/x/bin/java"), None, "PATH").describe() == "/x/bin/java (Java of unknown version, from PATH)"
    )
