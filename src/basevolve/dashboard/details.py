"""One call (prompt, raw reply, attempts) and one program (code, diff, outputs).

These are the only endpoints that return LLM-written text in bulk; they are fetched
when the user opens a call or a program, so the run page itself stays small.  Every
string goes out as JSON and the page puts it into the DOM as text (never as HTML).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from basevolve.dashboard.db import ReadOnlyStore
from basevolve.dashboard.program_files_view import diff_lines, file_diffs, files_of

#: Longest text returned per field; LLM replies and program outputs can be huge, and a
#: browser tab should not be asked to lay out megabytes (the export has everything).
MAX_TEXT = 200_000


def _clip(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    return {"text": text[:MAX_TEXT], "chars": len(text), "clipped": len(text) > MAX_TEXT}


def _json_or_text(raw: str | None) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def call_detail(store: ReadOnlyStore, run_id: str, call_index: int) -> dict[str, Any] | None:
    extra = "".join(f", c.{n}" for n in ("purpose", "meta_json", "model", "cost_usd")
                    if store.has("calls", n))  # model, cost_usd: issue 25
    row = store.one(f"""
        SELECT c.call_id, c.call_index, c.trajectory, c.pull_id, c.generation, c.slot,
               c.parent_id, c.reissue_of, c.seed, c.status, c.counted, c.messages_json,
               c.raw_text, c.text, c.finish_reason, c.prompt_tokens, c.cached_tokens,
               c.completion_tokens, c.flops, c.latency_s, c.error, c.created_at,
               c.completed_at{extra}
        FROM calls c WHERE c.run_id = ? AND c.call_index = ?""", (run_id, call_index))
    if row is None:
        return None
    call = dict(row)
    messages = _json_or_text(call.pop("messages_json"))
    if isinstance(messages, list):
        call["messages"] = [
            {"role": str(m.get("role", "?")) if isinstance(m, dict) else "?",
             "content": _clip(m.get("content") if isinstance(m, dict)
                              and isinstance(m.get("content"), str) else json.dumps(m))}
            for m in messages]
    else:
        call["messages"] = [{"role": "?", "content": _clip(str(messages))}]
    if "meta_json" in call:
        call["meta"] = _json_or_text(call.pop("meta_json"))
    call["raw_text"] = _clip(call["raw_text"])
    call["text"] = _clip(call["text"])
    call["attempts"] = [dict(r) for r in store.query(
        "SELECT attempt_index, status, latency_s, prompt_tokens, cached_tokens, "
        "completion_tokens, flops, error, http_status FROM attempts WHERE call_id = ? "
        "ORDER BY attempt_index", (call["call_id"],))]
    child = store.one("SELECT program_id, score, valid, substr(error, 1, 300) AS error "
                      "FROM programs WHERE call_id = ?", (call["call_id"],))
    call["program"] = None if child is None else dict(child)
    return call


def program_detail(store: ReadOnlyStore, run_id: str, program_id: int) -> dict[str, Any] | None:
    row = store.one("""
        SELECT p.program_id, p.call_id, p.is_initial, p.trajectory, p.generation, p.parent_id,
               p.code, p.score, p.strict_score, p.valid, p.strict_valid, p.metrics_json,
               p.error, p.isolation, p.seconds, p.stdout, p.stderr, p.created_at,
               c.call_index
        FROM programs p LEFT JOIN calls c ON c.call_id = p.call_id
        WHERE p.run_id = ? AND p.program_id = ?""", (run_id, program_id))
    if row is None:
        return None
    prog = dict(row)
    prog["metrics"] = _json_or_text(prog.pop("metrics_json"))
    parent = None
    if prog["parent_id"] is not None:
        parent = store.one("SELECT program_id, code, score FROM programs "
                           "WHERE run_id = ? AND program_id = ?", (run_id, prog["parent_id"]))
    code = prog.pop("code")
    prog["code"] = _clip(code)
    prog["stdout"] = _clip(prog["stdout"])
    prog["stderr"] = _clip(prog["stderr"])
    prog["parent_score"] = None if parent is None else parent["score"]
    prog["diff"] = None
    files = files_of(code)  # a program of several files: per-file sections and diffs
    prog["files"] = None if files is None else [
        {"path": k, "code": _clip(v)} for k, v in sorted(files.items())]
    parent_files = None if parent is None else files_of(parent["code"])
    if files is not None and parent_files is not None:
        diffs = file_diffs(parent_files, files, parent["program_id"], prog["program_id"])
        prog["file_diffs"] = [{"path": d["path"], "status": d["status"]} for d in diffs]
        prog["diff"] = diff_lines(diffs)[:MAX_TEXT // 40]
    elif parent is not None and code is not None and parent["code"] is not None:
        lines = list(difflib.unified_diff(
            parent["code"][:MAX_TEXT].splitlines(), code[:MAX_TEXT].splitlines(),
            fromfile=f"program {parent['program_id']} (parent)",
            tofile=f"program {prog['program_id']}", lineterm="", n=3))
        prog["diff"] = lines
    return prog
