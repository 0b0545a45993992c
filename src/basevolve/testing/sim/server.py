"""The simulated LLM behind the project's OpenAI-compatible test server."""

from __future__ import annotations

from basevolve.testing.llm_server import LLMTestServer
from basevolve.testing.sim.latency import TokenRateLatency
from basevolve.testing.sim.model import SimulatedLLM

#: Prompts kept by the emulated prefix cache of a simulator server (a real cache is
#: bounded too; 2,048 prompts of ~20 kB is ~40 MB).
PREFIX_CACHE_PROMPTS = 2048


def simulated_server(task: str, *, capability: float = 1.0, broken_rate: float = 0.08,
                     latency_s: float = 0.0, latency_model: TokenRateLatency | None = None,
                     port: int = 0, record: bool = False) -> LLMTestServer:
    """An (unstarted) test server answering with :class:`SimulatedLLM` replies.

    Usage is the test server's (prompt and completion tokens from text length, cached
    tokens from the emulated prefix cache), so FLOPs accounting runs on real numbers.
    ``record=False`` by default: a simulator serves whole benchmarks.
    """
    sim = SimulatedLLM(task, capability=capability, broken_rate=broken_rate)
    return LLMTestServer(sim, latency_s=latency_s, latency_model=latency_model, port=port,
                         record=record, prefix_cache_prompts=PREFIX_CACHE_PROMPTS)
