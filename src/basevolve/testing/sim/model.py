"""The simulated mutation LLM: from a prompt to a reply (issue 13, part 1).

One reply, given the request's seed (everything is drawn from
``np.random.default_rng([seed, capability])``, so a request repeats exactly; a named
model of a multi-model server adds its name to the key, ``SimulatedLLM.stream_key``):

1. **Read the request** from the prompt, as a real model would see it
   (:mod:`basevolve.testing.sim.request`): the reply format asked for (OpenEvolve's full
   rewrite or diff, CodeEvolve's SEARCH/REPLACE, ShinkaEvolve's tagged DIFF or CODE, a
   novelty judge, a meta prompt) and the parent -- in OpenEvolve's template the program
   under "# Current Program" and the "- Fitness:" line; in CodeEvolve's chat and
   ShinkaEvolve's messages the target / current program and its "- combined_score:".
   The parent's code gives its *family* (:meth:`TaskModel.classify`, by the code it
   contains).  A judge answers NOVEL with probability ``judge_novel_rate`` (0.3); a meta
   prompt gets one SEARCH/REPLACE edit inside its PROMPT-BLOCK (prose at the broken
   rate); AdaEvolve's paradigm call gets ideas naming the task's families as JSON (prose
   at the broken rate); none of these draws a decision.
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
   (see the family modules), in the requested format: for OpenEvolve's template a short
   answer with one fenced code block; for the island formats the child is the parent
   with its EVOLVE block replaced by the family program's body, given as SEARCH/REPLACE
   edits of that block or as the whole program in a ``<CODE>`` section
   (:mod:`basevolve.testing.sim.formats`).  Steps 2-4 and the family program's own draws
   are the same in every format: one seed gives one child, however it is asked for.

The parameters (per-family tables in :mod:`.cp`, :mod:`.mmd`, :mod:`.ht`) encode the
case studies' facts: ranges and ceilings, which family is the trap, how long runs stay
anchored (e.g. CP run 6 stayed in ring constructors for 437 generations, HT runs start
with ~40 generations of invalid output, an MMD scipy anchor froze a run for 504
generations).  They were set from those facts, not from any benchmark outcome.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from basevolve.errors import ConfigError
from basevolve.testing.sim.cp import MODEL as CP_MODEL
from basevolve.testing.sim.families import Family, TaskModel
from basevolve.testing.sim.formats import (
    PROSE,
    break_code,
    child_program,
    fenced,
    judge_reply,
    meta_reply,
    paradigm_reply,
    search_replace,
    tagged,
)
from basevolve.testing.sim.ht import MODEL as HT_MODEL
from basevolve.testing.sim.mmd import MODEL as MMD_MODEL
from basevolve.testing.sim.request import content, parent_of, read_request

MODELS: dict[str, TaskModel] = {m.task: m for m in (CP_MODEL, MMD_MODEL, HT_MODEL)}
BROKEN_KINDS = ("prose", "syntax", "wrong_entry")
#: P(a novelty judge answers NOVEL).  ShinkaEvolve asks its judge only about a child
#: that is already near-identical to a program of its island, so most answers are NOT
#: NOVEL; the rate is a stated choice, not a fact from the paper.
JUDGE_NOVEL_RATE = 0.3


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
    """One reply: its text, the decision behind it (``None`` for a judge or meta-prompt
    reply), what the child program returns (``None`` for prose and text replies), the
    request's format (:data:`basevolve.testing.sim.request.KINDS`) and, for island
    formats, the child program the reply makes of the parent (``None`` otherwise)."""

    text: str
    decision: Decision | None
    value: Any
    format: str = "full"
    program: str | None = None


class SimulatedLLM:
    """The reply model for one task; callable as the test server's ``replies``.

    ``stream``: the name of a served model (:mod:`basevolve.testing.sim.served`); its
    replies are drawn from ``[seed, capability, hash(name)]``, so each named model has
    its own stream.  None (one model per server) keeps ``[seed, capability]``.
    """

    def __init__(self, task: str, *, capability: float = 1.0, broken_rate: float = 0.08,
                 judge_novel_rate: float = JUDGE_NOVEL_RATE, stream: str | None = None) -> None:
        if task not in MODELS:
            raise ConfigError(
                f"--task {task!r} has no simulator; choose one of {', '.join(sorted(MODELS))}")
        if not (capability > 0 and math.isfinite(capability)):
            raise ConfigError(f"--capability must be > 0 (1 = default model), got {capability}")
        if not 0 <= broken_rate < 1:
            raise ConfigError(f"--broken-rate must be in [0, 1), got {broken_rate}")
        if not 0 <= judge_novel_rate <= 1:
            raise ConfigError(f"judge_novel_rate must be in [0, 1], got {judge_novel_rate}")
        self.model = MODELS[task]
        self.capability = float(capability)
        self.broken_rate = float(broken_rate)
        self.judge_novel_rate = float(judge_novel_rate)
        self.stream = stream
        self.stream_key = [round(self.capability * 1_000_000)]
        if stream is not None:
            # A named model (issue 25, part 4) draws from its own stream: two models of
            # equal capability served side by side are two models, not one stream.
            digest = hashlib.sha256(stream.encode("utf-8")).digest()
            self.stream_key.append(int.from_bytes(digest[:8], "big"))

    # ------------------------------------------------------------------ reading
    def read_parent(self, body: dict[str, Any]) -> tuple[str, float]:
        """(family, fitness) of the parent shown in the prompt (any protocol's prompt,
        :mod:`basevolve.testing.sim.request`)."""
        code, fitness = parent_of(content(body))
        return self.model.classify(code), fitness

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
    def render(self, d: Decision, rng: np.random.Generator, fmt: str = "full",
               parent: str = "") -> Reply:
        """The reply text for decision ``d`` in format ``fmt`` (a program reply: ``full``,
        ``diff``, ``tagged_diff`` or ``tagged_code``) against the ``parent`` shown in the
        prompt.  The family program is drawn exactly as for ``full``; the island formats
        then splice it into the parent (:mod:`basevolve.testing.sim.formats`)."""
        if d.kind == "prose":
            return Reply(PROSE, d, None, fmt)
        fam = self.model.family(d.family)
        code, value = fam.render(rng, d.fitness, d.valid)
        code = break_code(code, d.kind, self.model.entry)
        label = fam.name.replace("_", " ")
        if fmt == "full":
            text = (f"Here is a rewritten program ({label} approach).\n\n"
                    f"{fenced(code)}\n")
            return Reply(text, d, value, fmt)
        shown = parent if parent.endswith("\n") else parent + "\n"
        child = child_program(shown, code)
        if child == shown:  # an edit must change something: a model would touch the code
            child = child_program(shown, code, f"# revision {int(rng.integers(10**6))}\n")
        doc = code.split("\n", 1)[0].strip('"')
        how = (f"Switches from the {d.parent_family.replace('_', ' ')} approach."
               if d.switched else "Refines the current construction.")
        name = f"{fam.name}_{'switch' if d.switched else 'refine'}"
        if fmt == "tagged_code":
            text = tagged(name, f"{doc} {how}", "CODE", fenced(child))
        elif fmt == "tagged_diff":
            text = tagged(name, f"{doc} {how}", "DIFF", search_replace(shown, child))
        else:
            text = f"{doc} {how}\n\n{search_replace(shown, child)}\n"
        return Reply(text, d, value, fmt, child)

    def reply(self, body: dict[str, Any], index: int = 0) -> Reply:
        seed = body.get("seed")
        seed = int(seed) if isinstance(seed, int) and seed >= 0 else index
        # The capability is part of the stream: two models sampled with the same seed
        # write unrelated replies (a shared stream made their runs near-identical).
        rng = np.random.default_rng([seed, *self.stream_key])
        req = read_request(body)
        if req.kind == "judge":
            return Reply(judge_reply(bool(rng.random() < self.judge_novel_rate)), None, None,
                         req.kind)
        if req.kind == "meta_prompt":
            edit = None if rng.random() < self.broken_rate else meta_reply(req.prompt, rng)
            return Reply(edit or PROSE, None, None, req.kind)
        if req.kind == "paradigm":  # prose (unreadable) at the broken rate
            if rng.random() < self.broken_rate:
                return Reply(PROSE, None, None, req.kind)
            names = [f.name for f in self.model.families if f.valid > 0]
            return Reply(paradigm_reply(names, req.ideas, rng), None, None, req.kind)
        fam = self.model.classify(req.parent)
        return self.render(self.decide(fam, req.fitness, rng), rng, req.kind, req.parent)

    def __call__(self, body: dict[str, Any], index: int) -> str:
        return self.reply(body, index).text
