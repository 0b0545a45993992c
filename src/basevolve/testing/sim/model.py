"""The simulated mutation LLM: from a prompt to a reply (issue 13, part 1).

One reply, given the request's seed (everything is drawn from
``np.random.default_rng([seed, capability])``, so a request repeats exactly):

1. **Read the parent** from the prompt, as a real model would see it: the program under
   "# Current Program" gives the parent's *family* (:meth:`TaskModel.classify`, by the
   code it contains) and the "- Fitness:" line gives its score.
2. **Broken reply** with probability ``broken_rate`` (default 0.08): prose without code,
   a syntax error, or the right program under the wrong entry-function name -- the
   failure modes the embedded model showed (prompt text echoed into code, missing entry).
3. **Family of the child** -- anchoring (Appendix "Case Studies": "greedy commits to one
   algorithmic template early, and the template itself imposes the ceiling"): the child
   stays in the parent's family F with probability ``1 - F.leave``; otherwise it switches
   to another family G with probability proportional to G's base rate ``G.weight``,
   multiplied by ``capability`` when G is a *good* family (CP: SLSQP; MMD: the analytic
   rings; HT: SLSQP soft-min multistart).  ``capability`` models a weak (< 1) or strong
   (> 1) model: it changes how often the good families are written, nothing else.
4. **Fitness of the child**, as a position u in [0, 1] of the family's range
   ``[lo, hi]``:

   * entering a family (a switch): ``u ~ Beta(*G.entry)``;
   * staying, from a parent at position u_p: with probability ``F.snap`` the family's
     top construction (MMD: the exact 5+11 attractor); else with probability
     ``F.p_improve * (1 - u_p) ** F.gamma`` an improvement ``u = u_p + (1 - u_p) B``
     with ``B ~ Beta(1, 2)``; otherwise a copy-or-worse child ``u = u_p B'`` with
     ``B' ~ Beta(3, 1)``.  Improvements get rarer near the ceiling (the paper's runs sit
     at a family's plateau for hundreds of generations), and one step spreads child
     fitness broadly, as in the paper's figure of child fitness at T = 1;
   * the output is valid with probability ``G.valid`` (else the program returns data
     the real scorer rejects: fitness 0).
5. **Render** a real program of the family that returns an output scoring that fitness
   (see the family modules), wrapped in a short answer with one fenced code block.

The parameters (per-family tables in :mod:`.cp`, :mod:`.mmd`, :mod:`.ht`) encode the
case studies' facts: ranges and ceilings, which family is the trap, how long runs stay
anchored (e.g. CP run 6 stayed in ring constructors for 437 generations, HT runs start
with ~40 generations of invalid output, an MMD scipy anchor froze a run for 504
generations).  They were set from those facts, not from any benchmark outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from basevolve.errors import ConfigError
from basevolve.testing.sim import cp, ht, mmd
from basevolve.testing.sim.families import Family, TaskModel

MODELS: dict[str, TaskModel] = {m.task: m for m in (cp.MODEL, mmd.MODEL, ht.MODEL)}
BROKEN_KINDS = ("prose", "syntax", "wrong_entry")
_CURRENT = re.compile(r"# Current Program\s*\n```[\w+-]*\n(.*?)\n```", re.DOTALL)
_FITNESS = re.compile(r"^- Fitness: *(\S+)", re.MULTILINE)
_FENCE = re.compile(r"```[\w+-]*\n(.*?)\n```", re.DOTALL)


@dataclass(frozen=True)
class Decision:
    """What one reply will be (before rendering); tests and the docs read these."""

    kind: str  # "program" or one of BROKEN_KINDS
    parent_family: str
    family: str  # the child's family (for a broken reply: the family it would have had)
    switched: bool
    fitness: float  # the fitness of the output when valid
    valid: bool


@dataclass(frozen=True)
class Reply:
    text: str
    decision: Decision
    value: Any  # what the program returns (None for prose)


def _content(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts.extend(str(p.get("text", "")) for p in c if isinstance(p, dict))
    return "\n".join(parts)


class SimulatedLLM:
    """The reply model for one task; callable as the test server's ``replies``."""

    def __init__(self, task: str, *, capability: float = 1.0, broken_rate: float = 0.08) -> None:
        if task not in MODELS:
            raise ConfigError(
                f"--task {task!r} has no simulator; choose one of {', '.join(sorted(MODELS))}")
        if not capability > 0:
            raise ConfigError(f"--capability must be > 0 (1 = default model), got {capability}")
        if not 0 <= broken_rate < 1:
            raise ConfigError(f"--broken-rate must be in [0, 1), got {broken_rate}")
        self.model = MODELS[task]
        self.capability = float(capability)
        self.broken_rate = float(broken_rate)

    # ------------------------------------------------------------------ reading
    def read_parent(self, body: dict[str, Any]) -> tuple[str, float]:
        """(family, fitness) of the parent shown in the prompt."""
        text = _content(body)
        m = _CURRENT.search(text)
        if m is None:
            blocks = _FENCE.findall(text)
            code = blocks[-1] if blocks else ""
        else:
            code = m.group(1)
        f = _FITNESS.search(text)
        try:
            fitness = float(f.group(1)) if f else 0.0
        except ValueError:
            fitness = 0.0
        return self.model.classify(code), fitness if np.isfinite(fitness) else 0.0

    # ----------------------------------------------------------------- deciding
    def switch_probabilities(self, parent_family: str) -> dict[str, float]:
        """P(child family = G | parent family) for every G (sums to 1)."""
        fam = self.model.family(parent_family)
        others = [g for g in self.model.families if g.name != fam.name]
        w = np.array([g.weight * (self.capability if g.good else 1.0) for g in others])
        probs = {fam.name: 1.0 - fam.leave}
        for g, p in zip(others, fam.leave * w / w.sum(), strict=True):
            probs[g.name] = float(p)
        return probs

    def decide(self, parent_family: str, parent_fitness: float,
               rng: np.random.Generator) -> Decision:
        broken = rng.random() < self.broken_rate
        kind = BROKEN_KINDS[int(rng.integers(3))] if broken else "program"
        probs = self.switch_probabilities(parent_family)
        names = list(probs)
        g: Family = self.model.family(names[int(rng.choice(len(names), p=list(probs.values())))])
        switched = g.name != parent_family
        if switched:
            u = float(rng.beta(*g.entry))
        else:
            up = g.position(parent_fitness)
            if g.snap and rng.random() < g.snap:
                u = 1.0
            elif rng.random() < g.p_improve * (1.0 - up) ** g.gamma:
                u = up + (1.0 - up) * float(rng.beta(1.0, 2.0))
            else:
                u = up * float(rng.beta(3.0, 1.0))
        valid = bool(rng.random() < g.valid)
        return Decision(kind, parent_family, g.name, switched, g.fitness_at(u), valid)

    # ---------------------------------------------------------------- rendering
    def render(self, d: Decision, rng: np.random.Generator) -> Reply:
        if d.kind == "prose":
            text = ("The current approach is reasonable. To improve the fitness I would "
                    "refine the placement near the boundary and re-balance the spacing, "
                    "keeping the same inputs and outputs.\n")
            return Reply(text, d, None)
        fam = self.model.family(d.family)
        code, value = fam.render(rng, d.fitness, d.valid)
        if d.kind == "syntax":
            code = code.replace("    return ", "    return (", 1)
        elif d.kind == "wrong_entry":
            code = code.replace(f"def {self.model.entry}(", f"def {self.model.entry}_v2(", 1)
        text = (f"Here is a rewritten program ({fam.name.replace('_', ' ')} approach).\n\n"
                f"```python\n{code.rstrip()}\n```\n")
        return Reply(text, d, value)

    def reply(self, body: dict[str, Any], index: int = 0) -> Reply:
        seed = body.get("seed")
        seed = int(seed) if isinstance(seed, int) and seed >= 0 else index
        # The capability is part of the stream: two models sampled with the same seed
        # write unrelated replies (a shared stream made their runs near-identical).
        rng = np.random.default_rng([seed, round(self.capability * 1_000_000)])
        fam, fit = self.read_parent(body)
        return self.render(self.decide(fam, fit, rng), rng)

    def __call__(self, body: dict[str, Any], index: int) -> str:
        return self.reply(body, index).text
