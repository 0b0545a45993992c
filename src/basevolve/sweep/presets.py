"""The paper's three grids as editable sweep files (``basevolve sweep init --preset``).

* ``depth-breadth`` -- Section 4 / "Experiment Setup": greedy on Qwen3-8B/14B and Llama
  at C in {8, ..., 512}, T in {1, 2, 4, ..., C} (Qwen3-1.7B/4B capped at C = 128),
  10 seeds per cell, three tasks.
* ``base-vs-protocols`` -- Table 1 / Table 6: at C = 512, greedy (T = C) and the island
  protocols as baselines, and BaSE (random, round-robin, UCB, EXP3.P, Thompson; K = 10)
  over each protocol, 10 seeds.
* ``arm-pool`` -- Table 7: BaSE at C = 512, T = 512, N = 1 with K in {2, 5, 10, 20, 50}
  for UCB, EXP3.P and Thompson, 10 seeds.

Thompson is ``thompson_plain``, the plain Thompson sampling the paper cites (issue 23,
item 1); basevolve's discounted ``thompson`` is a variant of our own and not in these
grids (add it to a grid to compare).

Thresholds are Table 3's tau per task.  Endpoints are placeholders (one vLLM server per
model, 16 requests in flight, as in the paper): edit ``base_url`` before running.
"""

from __future__ import annotations

from pathlib import Path

from basevolve.errors import ConfigError

_COMMON = '''\
# One vLLM (or any OpenAI-compatible) server per model; edit the URLs to yours.
# `limit` = requests the server takes at once (the paper: vLLM, 16 in flight).
[[endpoints]]
base_url = "http://127.0.0.1:8000/v1"
limit = 16

[[endpoints]]
base_url = "http://127.0.0.1:8001/v1"
limit = 16

[[endpoints]]
base_url = "http://127.0.0.1:8002/v1"
limit = 16
'''

_THRESHOLDS = '''\
# tau of P(fitness >= tau) in the end-of-sweep summary (Table 3's thresholds).
[sweep.thresholds]
circle_packing = [0.95, 0.99, 0.999]
min_max_distance = [0.8, 0.9, 0.95]
heilbronn_triangle = [0.5, 0.7]
'''

_TASKS = 'task = ["circle_packing", "min_max_distance", "heilbronn_triangle"]'

PRESETS: dict[str, str] = {
    "depth-breadth": f'''\
# basevolve sweep: the depth-breadth grid (paper Section 4, "Experiment Setup").
# Greedy, C = T x N; every T in {{1, 2, 4, ..., C}} per budget; 10 seeds per cell.
# Run:    basevolve sweep depth-breadth.toml --store depth-breadth.sqlite
# Status: basevolve sweep depth-breadth.toml --store depth-breadth.sqlite --status
[sweep]
name = "depth-breadth"

{_THRESHOLDS}
{_COMMON}
[defaults]
protocol = "greedy"
allocator = "single"
seeds = 10

# Qwen3-8B, Qwen3-14B and Llama-3.1-8B at C = 8 ... 512.
[[grid]]
{_TASKS}
model = ["qwen3-8b", "qwen3-14b", "llama-3.1-8b"]
base_url = ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
zip = [["model", "base_url"]]
budget = [8, 16, 32, 64, 128, 256, 512]
depth = "powers-of-2"

# The smaller Qwen3 models, capped at C = 128.
[[grid]]
{_TASKS}
model = ["qwen3-1.7b", "qwen3-4b"]
base_url = ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"]
zip = [["model", "base_url"]]
budget = [8, 16, 32, 64, 128]
depth = "powers-of-2"
''',
    "base-vs-protocols": f'''\
# basevolve sweep: BaSE against the baselines (paper Table 1 and Table 6), C = 512.
# Baselines: greedy (T = C, N = 1) and the island protocols; BaSE: five allocators over
# K = 10 trajectories of each protocol.  10 seeds per cell.
# The island protocols (openevolve, codeevolve, shinkaevolve) must be registered in
# your basevolve (`basevolve run --help` lists them); drop the ones you do not have.
[sweep]
name = "base-vs-protocols"

{_THRESHOLDS}
{_COMMON}
[defaults]
{_TASKS}
model = ["qwen3-8b", "llama-3.1-8b", "qwen3-14b"]
base_url = ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
budget = 512
seeds = 10

# Baselines: one trajectory gets every call.
[[grid]]
zip = [["model", "base_url"]]
protocol = ["greedy", "openevolve", "codeevolve", "shinkaevolve"]
allocator = "single"

# BaSE (Algorithm 2): K = 10 trajectories of the same protocol, a bandit allocates calls.
[[grid]]
zip = [["model", "base_url"]]
protocol = ["greedy", "openevolve", "codeevolve", "shinkaevolve"]
allocator = ["random", "round_robin", "ucb", "exp3p", "thompson_plain"]
arms = 10
''',
    "arm-pool": f'''\
# basevolve sweep: BaSE arm-pool ablation (paper Table 7), C = 512, T = 512, N = 1.
[sweep]
name = "arm-pool"

{_THRESHOLDS}
{_COMMON}
[[grid]]
{_TASKS}
model = ["qwen3-8b", "llama-3.1-8b", "qwen3-14b"]
base_url = ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
zip = [["model", "base_url"]]
budget = 512
depth = 512
protocol = "greedy"
allocator = ["ucb", "exp3p", "thompson_plain"]
arms = [2, 5, 10, 20, 50]
seeds = 10
''',
}


def preset_text(name: str) -> str:
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; known presets: {', '.join(PRESETS)}")
    return PRESETS[name]


def write_preset(name: str, out: str | Path | None = None, *, force: bool = False) -> Path:
    """Write preset ``name`` to ``out`` (default ``NAME.toml``); never overwrite silently."""
    text = preset_text(name)
    path = Path(out) if out is not None else Path(f"{name}.toml")
    if path.exists() and not force:
        raise ConfigError(f"{str(path)!r} already exists; choose another path with --out "
                          "or pass --force to overwrite it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return path


__all__ = ["PRESETS", "preset_text", "write_preset"]
