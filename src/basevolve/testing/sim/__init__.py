"""A simulated mutation LLM for the built-in tasks (issue 13).

:class:`SimulatedLLM` turns a protocol's prompt into a reply holding a real Python
program from one of the task's algorithmic families (paper, Appendix "Case Studies"), in
the format the prompt asks for: OpenEvolve's full rewrite (greedy, BaSE) or diff,
CodeEvolve's SEARCH/REPLACE edits and meta-prompt edits, ShinkaEvolve's
NAME / DESCRIPTION / DIFF or CODE replies and novelty verdicts (:mod:`.request` reads
the request, :mod:`.formats` writes the reply); :func:`simulated_server` serves it over
the OpenAI protocol through the project's test server, or several named models of
different capability on one port (:mod:`.served`, :mod:`.router`; issue 25).  The
model and its parameters are documented in :mod:`basevolve.testing.sim.model`;
``basevolve simulate-server`` is the command line.
"""

from __future__ import annotations

from basevolve.testing.sim.latency import TokenRateLatency
from basevolve.testing.sim.model import MODELS, Decision, Reply, SimulatedLLM
from basevolve.testing.sim.router import ModelRouter
from basevolve.testing.sim.served import ServedModel
from basevolve.testing.sim.server import simulated_server

__all__ = ["MODELS", "Decision", "ModelRouter", "Reply", "ServedModel", "SimulatedLLM",
           "TokenRateLatency", "simulated_server"]
