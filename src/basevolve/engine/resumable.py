"""Runs this version cannot resume, refused before anything is replayed (issue 23).

Resume replays a run's stored events through the protocols (engine/replay.py), so it
needs the protocol to make the same calls at the same points as the version that stored
them.  Where a fix to the paper's behaviour moved such a point, a run stored before the
fix would replay into a different state; it is refused with one line that says why and
what to do, and nothing in the store is touched.

* ShinkaEvolve with ``novelty=judge`` (issue 23, item 5): the judge is now asked
  *before* the proposal is evaluated, its call carrying ``gates_program`` in the stored
  call meta.  Before, the proposal was evaluated first and the judge asked afterwards,
  so a stored judge call without that mark belongs to the old order.
"""

from __future__ import annotations

import json
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import ConfigError


def check_resumable(store: Any, run_id: str, cfg: RunConfig) -> None:
    """Raise :class:`ConfigError` when ``run_id`` was stored in an order this version
    does not replay (module docstring); return None otherwise."""
    if cfg.protocol == "shinkaevolve" and cfg.protocol_params.get("novelty") == "judge":
        rows = store.query("SELECT meta_json FROM calls WHERE run_id=? AND purpose='judge'",
                           (run_id,))
        old = sum(1 for r in rows if not _meta(r["meta_json"]).get("gates_program"))
        if old:
            raise ConfigError(
                f"run {run_id!r} cannot be resumed: {old} of its novelty-judge calls were "
                "asked after their proposal was evaluated, the order of basevolve before "
                "ShinkaEvolve's judge decided first (issue 23); this version would replay it "
                "differently.  Its calls and programs stay readable (summary, export, "
                "dashboard); start a new run to continue the search")


def _meta(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


__all__ = ["check_resumable"]
