"""What a simulated algorithmic family is, and the helpers every family renderer shares.

A family (paper, Appendix "Case Studies") is a kind of program the LLM writes for a task:
e.g. on circle packing "hand-coded ring constructors with uniform radii" or
"``scipy.optimize`` SLSQP on centres and radii".  The simulator models a family by

* the fitness range ``[lo, hi]`` its *valid* outputs fall in (its ceiling is ``hi``);
* how often the LLM writes it from scratch (``weight``, a base rate; ``good`` families'
  weights are multiplied by the capability knob);
* how strongly a parent of this family anchors its child (``leave``: the probability
  that the child is of another family);
* how one mutation inside the family moves fitness (``p_improve``, ``gamma``): see
  :mod:`basevolve.testing.sim.model`;
* where a child that *enters* the family lands (``entry``: Beta parameters of its
  position in the range);
* how often its program returns an invalid output (``valid``), which the real scorer
  turns into fitness 0;
* a ``marker`` substring that identifies the family in a parent program; and a
  ``render(rng, fitness, valid)`` that writes a real program of the family whose output
  scores ``fitness`` (to float rounding) under the task's real scorer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from basevolve.prompts.diff import END_MARKER, START_MARKER, evolve_blocks

Render = Callable[[np.random.Generator, float, bool], tuple[str, Any]]


@dataclass(frozen=True)
class Family:
    """One algorithmic family of one task (module doc)."""

    name: str
    lo: float
    hi: float
    weight: float
    good: bool
    leave: float
    p_improve: float
    gamma: float
    entry: tuple[float, float]
    valid: float
    marker: str
    render: Render
    snap: float = 0.0  # P(a child inside the family is exactly the top construction)

    def fitness_at(self, u: float) -> float:
        """Fitness at position ``u`` in [0, 1] of the family's range."""
        return self.lo + float(np.clip(u, 0.0, 1.0)) * (self.hi - self.lo)

    def position(self, fitness: float) -> float:
        """Position of ``fitness`` in the range, clipped to [0, 1] (0 for a flat range)."""
        if self.hi <= self.lo:
            return 0.0
        return float(np.clip((fitness - self.lo) / (self.hi - self.lo), 0.0, 1.0))


@dataclass(frozen=True)
class TaskModel:
    """The families of one task; ``initial`` is the family of the task's initial program
    (and of any parent no marker matches)."""

    task: str
    entry: str
    initial: str
    families: tuple[Family, ...]

    def family(self, name: str) -> Family:
        for f in self.families:
            if f.name == name:
                return f
        raise KeyError(f"task {self.task!r} has no family {name!r}")

    def classify(self, code: str) -> str:
        """The family a program belongs to, read from its code (first marker found)."""
        for f in self.families:
            if f.marker and f.marker in code:
                return f.name
        return self.initial


@lru_cache(maxsize=64)
def source(*fns: Callable[..., Any]) -> str:
    """The source of builder functions, to paste into an emitted program."""
    return "\n\n".join(inspect.getsource(fn).rstrip() for fn in fns)


def literal(a: Any) -> str:
    """A numpy array as an exact Python literal (``repr`` of floats round-trips)."""
    return repr(np.asarray(a, dtype=float).tolist())


def bisect(fn: Callable[[float], float], target: float, a: float, b: float,
           iters: int = 30) -> float:
    """A parameter x in [a, b] with fn(x) ~= target (from above), for a continuous fn
    that is highest at ``a``; ``a`` itself when even fn(a) is below the target."""
    if fn(a) < target:
        return a
    for _ in range(iters):
        m = 0.5 * (a + b)
        if fn(m) >= target:
            a = m
        else:
            b = m
    return a


def program(doc: str, imports: str, helpers: str, entry: str, body: str) -> str:
    """An emitted program in the layout of the task's initial program (EVOLVE block).

    This is the full-rewrite layout (OpenEvolve's template, greedy): the helpers sit above
    the EVOLVE block.  A reply that may change only the EVOLVE block (CodeEvolve,
    ShinkaEvolve) carries :func:`evolve_body` of this program instead.
    """
    return (f'"""{doc}"""\n\n{imports}\n\n\n{helpers}\n\n\n# {START_MARKER}\n'
            f"def {entry}():\n{body.rstrip()}\n\n\n# {END_MARKER}\n")


def evolve_body(code: str) -> str:
    """Everything a program written by :func:`program` needs -- its imports, helpers and
    entry function, its docstring as a comment -- as the body of one EVOLVE block.

    Why: the island protocols' replies may change only the text between the EVOLVE
    markers (paper, Appendix "Prompts" -> CodeEvolve / ShinkaEvolve), so a child of
    another family must bring its helpers *inside* the block, while the parent's text
    outside the block (the task's docstring, imports and ``__main__`` guard) stays.
    """
    (start, end), = evolve_blocks(code)[:1]
    head = code[:start].splitlines(keepends=True)[:-1]  # without the START marker line
    if head and head[0].startswith('"""') and head[0].rstrip().endswith('"""'):
        head[0] = "# " + head[0].strip().strip('"') + "\n"
    return "".join(head) + code[start:end]
