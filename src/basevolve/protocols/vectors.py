"""The objective vectors a trajectory has seen, by program id (issue 36, item 3).

One per protocol instance (:attr:`basevolve.protocols.base.Protocol.vectors`): every
usable child told to the protocol (and the initial program) is noted, so a parent's
vector is at hand for its prompt (:mod:`basevolve.prompts.objectives`) and for choosing
parents from the front (:mod:`basevolve.protocols.front_parents`).  In a single-objective
run it notes nothing and leaves prompts alone.  Its own module so the protocol base stays
a hook line per use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from basevolve.objectives import Objectives
from basevolve.prompts.objectives import add_objectives

if TYPE_CHECKING:
    from basevolve.protocols.base import Child

Vector = tuple[float, ...]


class ObjectiveVectors:
    """Program id -> objective vector (None when a metric is missing or not finite)."""

    def __init__(self, objectives: Objectives | None) -> None:
        self.objectives = objectives
        self._by_id: dict[int | None, Vector | None] = {}

    def note(self, child: Child) -> None:
        """Remember a usable child's vector (the store id is the key)."""
        if self.objectives is not None and child.usable and child.metrics:
            self._by_id[child.program_id] = self.objectives.vector(child.metrics)

    def get(self, program_id: int | None) -> Vector | None:
        return self._by_id.get(program_id)

    def prompt(self, messages: list[dict[str, str]], parent_id: int | None
               ) -> list[dict[str, str]]:
        """``messages`` with the objectives section for the parent ``parent_id``."""
        return add_objectives(messages, self.objectives, self.get(parent_id))
