"""A real :class:`~basevolve.engine.models.ModelRouter` on a real store, for tests that
ask it one decision and one reward at a time (issue 34/35): no server is contacted
(building a client does no I/O) and the decisions and rewards land in ``model_events``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.engine.models import ModelRouter
from basevolve.engine.runner import llm_settings
from basevolve.llm.ensemble import model_entries
from basevolve.llm.factory import make_client
from basevolve.protocols import Proposal
from basevolve.store import RunStore

URL = "http://127.0.0.1:9/v1"  # never contacted


def router(tmp_path: Path, models: tuple[str, ...], **kw: Any) -> ModelRouter:
    """A router for ``models`` (``NAME,key=value`` entries) with ``kw`` as run options."""
    first = models[0].split(",")[0]
    cfg = RunConfig(task="circle_packing", budget=20, model=first, base_url=URL, seed=1,
                    models=models, run_id="r", **kw)
    store = RunStore(tmp_path / "router.sqlite")
    store.create_run("r", cfg.to_dict(), active_params=None)
    settings = llm_settings(cfg)
    client = make_client(first, URL, params=model_entries(cfg)[0].params, settings=settings)
    return ModelRouter(cfg, client, settings, store=store, run_id="r")


def proposal(trajectory: int = 0) -> Proposal:
    return Proposal(parent_id=None, parent_code="", generation=1, slot=0,
                    messages=[{"role": "user", "content": "improve"}], trajectory=trajectory)
