"""Within-trajectory parent-sampling protocols (paper, Section 3; docs/design.md ``protocols/``).

``PROTOCOLS.get(name)(task=..., breadth=N, trajectory=i)`` builds one protocol per
trajectory.  Built-ins: ``greedy`` and the island protocols ``openevolve``, ``codeevolve``,
``shinkaevolve`` and ``adaevolve`` (:mod:`basevolve.protocols.island_base`, population in
:mod:`basevolve.protocols.islands`).

Engine loop, per trajectory (one protocol each; BaSE runs K of them)::

    proto = PROTOCOLS.get("greedy")(task=task, breadth=N, trajectory=i, rng=rng_i)
    proto.set_initial(Child(None, task.initial_program, score, valid, error))
    while budget_left and proto.can_ask():          # False at a generation barrier
        p = proto.ask()                             # p.messages -> LLM
        parsed = proto.parse_reply(p, completion.text)   # ParsedProgram(code|None, error)
        ... evaluate parsed.code in the sandbox ...
        proto.tell(p, Child(program_id, parsed.code, score, valid, error))
    # a call lost in flight: proto.cancel(p); greedy then re-asks the identical proposal

Run options reach a protocol as constructor keywords: ``breadth``, ``asynchronous``,
``feedback`` (``--feedback``: with ``"artifacts"`` a parent's evaluator feedback goes
into the prompts built from it, :meth:`Protocol.feedback_section`) and the declared
``--protocol-param`` values.

Adding a protocol: subclass :class:`Protocol`, implement ``generation``, ``_can_ask``,
``_ask`` and ``_tell`` (optionally ``_cancel``, ``_summary``, ``parse_reply`` for diff
edits), draw randomness only from ``self.rng``, and ``PROTOCOLS.register(name, cls)``.
"""

from __future__ import annotations

from basevolve.params import Param, split_assignments
from basevolve.protocols.adaevolve import AdaEvolveProtocol
from basevolve.protocols.base import (
    PROTOCOLS,
    PURPOSES,
    TEXT_PURPOSES,
    Child,
    Proposal,
    Protocol,
    ProtocolStateError,
    Told,
)
from basevolve.protocols.codeevolve import CodeEvolveProtocol
from basevolve.protocols.greedy import GreedyProtocol, HistoryOptions
from basevolve.protocols.openevolve import OpenEvolveProtocol
from basevolve.protocols.shinkaevolve import ShinkaEvolveProtocol

__all__ = [
    "PROTOCOLS",
    "PURPOSES",
    "TEXT_PURPOSES",
    "AdaEvolveProtocol",
    "Child",
    "CodeEvolveProtocol",
    "GreedyProtocol",
    "HistoryOptions",
    "OpenEvolveProtocol",
    "Param",
    "Proposal",
    "Protocol",
    "ProtocolStateError",
    "ShinkaEvolveProtocol",
    "Told",
    "split_assignments",
]
