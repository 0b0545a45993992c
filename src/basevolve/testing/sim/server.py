"""The simulated LLM behind the project's OpenAI-compatible test server."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import overload

from basevolve.errors import ConfigError
from basevolve.testing.llm_server import LatencyModel, LLMTestServer
from basevolve.testing.sim.latency import TokenRateLatency
from basevolve.testing.sim.model import SimulatedLLM
from basevolve.testing.sim.router import ModelRouter
from basevolve.testing.sim.served import ServedModel, served_models

#: Prompts kept by the emulated prefix cache of a simulator server (a real cache is
#: bounded too; 2,048 prompts of ~20 kB is ~40 MB).
PREFIX_CACHE_PROMPTS = 2048


@overload
def simulated_server(task: str, *, capability: float | None = None, broken_rate: float = 0.08,
                     latency_s: float = 0.0, latency_model: LatencyModel | None = None,
                     port: int = 0, record: bool = False, models: None = None,
                     ) -> LLMTestServer: ...
@overload
def simulated_server(task: str, *, capability: float | None = None, broken_rate: float = 0.08,
                     latency_s: float = 0.0, latency_model: LatencyModel | None = None,
                     port: int = 0, record: bool = False,
                     models: Mapping[str, float | ServedModel],
                     ) -> ModelRouter: ...
def simulated_server(task: str, *, capability: float | None = None, broken_rate: float = 0.08,
                     latency_s: float = 0.0, latency_model: LatencyModel | None = None,
                     port: int = 0, record: bool = False,
                     models: Mapping[str, float | ServedModel] | None = None,
                     ) -> LLMTestServer | ModelRouter:
    """An (unstarted) test server answering with :class:`SimulatedLLM` replies.

    Usage is the test server's (prompt and completion tokens from text length, cached
    tokens from the emulated prefix cache), so FLOPs accounting runs on real numbers.
    ``record=False`` by default: a simulator serves whole benchmarks.

    ``models`` (issue 25, part 4): name -> capability or :class:`ServedModel`; one port
    then serves every named model, each a server of its own behind a
    :class:`ModelRouter` (own stream, prefix cache, slots and latency; a ``decode_tps``
    replaces ``latency_model.decode_tps`` for that model).  ``capability`` is for the
    single-model server only (default 1).
    """
    if models is None:
        sim = SimulatedLLM(task, capability=1.0 if capability is None else capability,
                           broken_rate=broken_rate)
        return LLMTestServer(sim, latency_s=latency_s, latency_model=latency_model, port=port,
                             record=record, prefix_cache_prompts=PREFIX_CACHE_PROMPTS)
    if capability is not None:
        raise ConfigError("--capability is for a single-model server; with --model give "
                          "each model its capability (NAME=CAPABILITY)")
    served = served_models(models)
    sims = {name: SimulatedLLM(task, capability=m.capability, broken_rate=broken_rate,
                               stream=name) for name, m in served.items()}
    backends: dict[str, LLMTestServer] = {}
    try:
        for name, m in served.items():
            backends[name] = LLMTestServer(
                sims[name], latency_s=latency_s, latency_model=_latency_of(latency_model, m),
                record=record, prefix_cache_prompts=PREFIX_CACHE_PROMPTS, model_ids=(name,))
        return ModelRouter(backends, params={n: m.params for n, m in served.items()},
                           port=port)
    except BaseException:
        for b in backends.values():
            b.close()
        raise


def _latency_of(latency: LatencyModel | None, model: ServedModel) -> LatencyModel | None:
    """The model's latency: the server's with the model's own decode rate, if it has one
    (each backend has its own slots either way: the test server makes them per server)."""
    if model.decode_tps is None:
        return latency
    if not isinstance(latency, TokenRateLatency):
        raise ConfigError("a model's decode rate (NAME=CAP:PARAMS:DECODE_TPS) needs "
                          "--latency tokens")
    return dataclasses.replace(latency, decode_tps=model.decode_tps)
