"""Resume: rebuild an engine's whole state from the store (issue 4, part 4).

Why replay rather than snapshots: protocols and allocators are deterministic ask/tell
objects (given the run seed), so re-applying the stored events in their original order
(the store's per-run ``seq``) reproduces their exact state; nothing needs to be
serialised besides what the store already holds.  Every allocator ``ask`` is checked to
choose the stored arm and every protocol ask the stored (generation, slot), so a
diverging replay stops with :class:`StoreError` instead of silently continuing.

After the replay:

* calls still ``pending`` were in flight when the process died: they become ``lost``
  (their cost is unknown and not charged) and their proposals are re-issued as new
  calls (``reissue_of``), so the run still ends with exactly C counted calls;
* answered calls without a program row (died during evaluation) are evaluated from the
  stored reply, without a new LLM call; answered judge/meta calls whose reply was not yet
  handed to the protocol (no ``told_seq``) are handed over now;
* a pull whose last child was told but whose allocator ``tell`` was not yet written is
  closed now (under ``--reward improvement`` once its children are settled,
  :mod:`basevolve.engine.credit`, whose gains are rebuilt by the same tells).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from basevolve.engine.followups import declared_followups, release_followups
from basevolve.engine.models import CallCost
from basevolve.engine.state import CallJob, child_from_row
from basevolve.errors import StoreError
from basevolve.protocols import Proposal

if TYPE_CHECKING:
    from basevolve.engine.core import Engine


def _events(engine: Engine) -> list[tuple[int, str, Any]]:
    q, run = engine.store.query, (engine.run_id,)
    calls = q("SELECT * FROM calls WHERE run_id=?", run)
    progs = q("SELECT * FROM programs WHERE run_id=? AND is_initial=0", run)
    allocs = q("SELECT * FROM allocations WHERE run_id=?", run)
    ev = [(r["seq"], "call", r) for r in calls] + [(r["seq"], "prog", r) for r in progs]
    ev += [(r["told_seq"], "text", r) for r in calls if r["told_seq"] is not None]
    ev += [(r["seq"], "alloc", r) for r in allocs]
    ev += [(r["seq"], "model", r) for r in q(  # the model bandit's rewards (issue 25)
        "SELECT * FROM model_events WHERE run_id=? AND kind != 'ask'", run)]
    ev.sort(key=lambda e: e[0])
    return ev


def replay_into(engine: Engine) -> None:
    """Bring a freshly built engine (initial program set) to the stored state."""
    engine.store.forget_unissued_asks(engine.run_id)  # killed between ask and call row
    jobs: dict[int, CallJob] = {}
    texts: dict[int, str | None] = {}  # stored replies, for Protocol.observe_reply
    calls: list[Any] = []
    told: set[int] = set()
    key_of: dict[int, int] = {}  # call_index -> its key in the issue order
    for seq, kind, r in _events(engine):
        if kind == "model":
            live = False  # replaying: the event is stored already
            if r["kind"] == "tell":
                engine.models.tell(key_of[r["call_index"]], r["call_index"], r["reward"],
                                   live=live)
            else:
                engine.models.cancel(key_of[r["call_index"]], r["call_index"], live=live)
            continue
        t = r["trajectory"]
        if kind == "alloc":
            _replay_alloc(engine, seq, r)
        elif kind == "call":
            pull = engine.open_pulls.get(r["pull_id"])
            if pull is None:
                raise StoreError(f"call {r['call_id']} belongs to unknown pull {r['pull_id']}")
            if r["reissue_of"] is None:
                key, engine.next_key = engine.next_key, engine.next_key + 1
                proposal: Proposal = engine.protocols[t].ask()
                pull.to_issue -= 1
                if (proposal.generation, proposal.slot) != (r["generation"], r["slot"]):
                    raise StoreError(
                        f"resume diverged at call {r['call_index']}: stored (generation, slot) "
                        f"{(r['generation'], r['slot'])}, protocol asked {proposal.key}")
                model = engine.models.choose(proposal, key=key, call_index=r["call_index"],
                                             best=engine.protocols[t].best.score, replay=r,
                                             trajectory=t) \
                    if r["model"] is not None else 0
                pull.owed += declared_followups(proposal)
            else:
                original = jobs[r["reissue_of"]]
                proposal, key, model = original.proposal, original.key, original.model
            key_of[r["call_index"]] = key
            engine.models.place(model, key)  # its place among its model's calls (issue 34)
            if r["status"] == "ok":  # its reply's cost, for a per-cost model reward
                engine.models.costs(key, CallCost(
                    float(r["flops"] or 0.0),
                    (r["prompt_tokens"] or 0) + (r["completion_tokens"] or 0), r["cost_usd"]))
            jobs[r["call_id"]] = CallJob(r["call_id"], r["call_index"], proposal, pull, r["seed"],
                                         key=key, model=model)
            texts[r["call_id"]] = r["text"]
            calls.append(r)
        elif kind == "text":  # a judge/meta reply handed to the protocol
            job = jobs[r["call_id"]]
            release_followups(job.pull, job.proposal)
            engine.credit.tell_text(job, r["text"] or "")
            job.pull.told += 1
            told.add(r["call_id"])
        else:
            job = jobs[r["call_id"]]
            child = child_from_row(r)
            engine.protocols[t].observe_reply(job.proposal, texts.get(r["call_id"]) or "")
            release_followups(job.pull, job.proposal)
            engine.credit.tell_child(job, child)  # the gain's credit rebuilt too
            engine.children += 1
            engine.valid_children += int(child.valid)
            job.pull.told += 1
            told.add(r["call_id"])
    for t in range(engine.K):  # died between the last tell and the allocator's tell
        for pull in engine.credit.ready(t):
            engine.close_pull(pull)
    _restore_counters(engine, calls)
    _requeue(engine, calls, jobs, told)


def _replay_alloc(engine: Engine, seq: int, r: Any) -> None:
    t, kind = r["trajectory"], r["kind"]
    if kind in ("assign", "ask"):
        if kind == "assign":
            engine.allocator.assign(t, ticket=seq)
            engine.next_assign += 1
        else:
            arm = engine.allocator.ask(json.loads(r["eligible_json"]), ticket=seq)
            if arm != t:
                raise StoreError(f"resume diverged at allocation event {seq}: stored arm {t}, "
                                 f"allocator chose {arm} (same seed and allocator params?)")
        engine.open_pull(seq, t, r["units"])
    elif kind == "tell":
        engine.allocator.tell(t, r["reward"], ticket=r["pull_id"])
        engine.credit.reward(engine.open_pulls.pop(r["pull_id"]))  # forget its credit
    else:
        engine.allocator.cancel(t, ticket=r["pull_id"])
        engine.credit.forget(r["pull_id"])
        engine.open_pulls.pop(r["pull_id"], None)


def _restore_counters(engine: Engine, calls: list[Any]) -> None:
    engine.completed = sum(int(r["counted"]) for r in calls)
    engine.flops = sum(r["flops"] or 0.0 for r in calls)
    engine.next_call_index = 1 + max((r["call_index"] for r in calls), default=-1)
    if engine.ledger is not None:  # FLOPs/token budget: what was spent, lost calls charged
        engine.ledger.restore(calls, engine.store.query(
            "SELECT a.call_id, a.prompt_tokens, a.completion_tokens, a.flops, a.error, c.model "
            "FROM attempts a JOIN calls c USING (call_id) WHERE c.run_id=?", (engine.run_id,)),
            engine.store.eval_totals(engine.run_id),
            {m.name: m.active_params for m in engine.models.models})
    if engine.completed > engine.C:
        raise StoreError(f"run {engine.run_id!r} already has {engine.completed} counted calls, "
                         f"more than its budget {engine.C}; the store is inconsistent")


def _requeue(engine: Engine, calls: list[Any], jobs: dict[int, CallJob], told: set[int]) -> None:
    """Queue what the live run still owed, and hand the engine's ordering rule the calls
    decided and not yet told (``--deterministic`` tells them in their issue order)."""
    engine.store.mark_lost(engine.run_id)  # pending -> lost: in flight when the process died
    reissued = {r["reissue_of"] for r in calls if r["reissue_of"] is not None}
    untold: list[CallJob] = []
    for r in calls:
        job = jobs[r["call_id"]]
        status = r["status"]
        if status == "ok" and r["call_id"] not in told and job.proposal.is_text:
            engine.pending_texts.append((job, r["text"] or ""))
        elif status == "ok" and r["call_id"] not in told:
            parsed = engine.parse(job, r["text"] or "")
            engine.pending_evals.append((job, parsed.code, parsed.error))
        elif status in ("pending", "lost", "failed") and r["call_id"] not in reissued:
            if status == "failed" and engine.completed + engine.reserved() >= engine.C:
                release_followups(job.pull, job.proposal)
                continue  # a counted failure at the end of the budget is not retried
            engine.reissue.append((job.proposal, job.pull, job))
        else:
            continue
        untold.append(job)
    engine.order.restore(untold)
