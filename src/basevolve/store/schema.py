"""Schema of the basevolve run store: numbered migrations and the file guard.

Why numbered functions: a store written by an older basevolve is upgraded in place by
running the missing migrations in order (``PRAGMA user_version`` records how many ran);
a store written by a *newer* basevolve is refused instead of being silently misread.

Why a marker table: a store path is user input.  Pointing ``--store`` at a random
SQLite database or at a non-SQLite file must fail with :class:`StoreError` and leave
that file byte-for-byte untouched, so the guard inspects the file read-only before
anything is written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from basevolve.errors import StoreError

MARKER_KEY = "format"
MARKER_VALUE = "basevolve-store"
SQLITE_MAGIC = b"SQLite format 3\x00"

RUN_STATUSES = ("created", "running", "finished", "failed", "interrupted")
CALL_STATUSES = ("pending", "ok", "failed", "lost")
ALLOC_KINDS = ("assign", "ask", "tell", "cancel")


def _m001_initial() -> str:
    """Version 1: runs, trajectories, calls + attempts, programs, allocations, summary."""
    statuses = ", ".join(f"'{s}'" for s in RUN_STATUSES)
    call_statuses = ", ".join(f"'{s}'" for s in CALL_STATUSES)
    kinds = ", ".join(f"'{s}'" for s in ALLOC_KINDS)
    return f"""
        CREATE TABLE basevolve_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO basevolve_meta VALUES ('{MARKER_KEY}', '{MARKER_VALUE}');
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            task TEXT NOT NULL, model TEXT NOT NULL, protocol TEXT NOT NULL,
            allocator TEXT NOT NULL, arms INTEGER NOT NULL, budget INTEGER NOT NULL,
            depth INTEGER NOT NULL, breadth INTEGER NOT NULL, seed INTEGER NOT NULL,
            active_params REAL,
            config_json TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ({statuses})),
            error TEXT,
            basevolve_version TEXT, python_version TEXT, numpy_version TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL
        );
        CREATE TABLE trajectories (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            trajectory INTEGER NOT NULL,
            protocol TEXT NOT NULL,
            pulls INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, trajectory)
        );
        CREATE TABLE calls (
            call_id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            call_index INTEGER NOT NULL,
            seq INTEGER NOT NULL,
            trajectory INTEGER NOT NULL,
            pull_id INTEGER NOT NULL,
            generation INTEGER NOT NULL,
            slot INTEGER NOT NULL,
            parent_id INTEGER,
            reissue_of INTEGER REFERENCES calls(call_id),
            seed INTEGER NOT NULL,
            messages_json TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ({call_statuses})),
            counted INTEGER NOT NULL DEFAULT 0,
            raw_text TEXT, text TEXT, finish_reason TEXT,
            prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER,
            flops REAL, latency_s REAL, error TEXT,
            created_at REAL NOT NULL, completed_at REAL,
            UNIQUE (run_id, call_index), UNIQUE (run_id, seq)
        );
        CREATE UNIQUE INDEX calls_one_reissue ON calls(reissue_of) WHERE reissue_of IS NOT NULL;
        CREATE TABLE attempts (
            call_id INTEGER NOT NULL REFERENCES calls(call_id),
            attempt_index INTEGER NOT NULL,
            status TEXT NOT NULL, latency_s REAL,
            prompt_tokens INTEGER, cached_tokens INTEGER, completion_tokens INTEGER,
            flops REAL, error TEXT, http_status INTEGER,
            PRIMARY KEY (call_id, attempt_index)
        );
        CREATE TABLE programs (
            program_id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            call_id INTEGER UNIQUE REFERENCES calls(call_id),
            is_initial INTEGER NOT NULL DEFAULT 0,
            seq INTEGER,
            trajectory INTEGER, generation INTEGER NOT NULL,
            parent_id INTEGER REFERENCES programs(program_id),
            code TEXT, code_sha256 TEXT,
            score REAL NOT NULL, strict_score REAL, valid INTEGER NOT NULL,
            strict_valid INTEGER, metrics_json TEXT, error TEXT, isolation TEXT,
            seconds REAL, stdout TEXT, stderr TEXT,
            created_at REAL NOT NULL,
            UNIQUE (run_id, seq)
        );
        CREATE UNIQUE INDEX programs_one_initial ON programs(run_id) WHERE is_initial = 1;
        CREATE TABLE allocations (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ({kinds})),
            pull_id INTEGER NOT NULL,
            call_index INTEGER,
            trajectory INTEGER NOT NULL,
            units INTEGER,
            reward REAL,
            eligible_json TEXT,
            summary_json TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, seq)
        );
        CREATE TABLE run_summary (
            run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
            calls_completed INTEGER NOT NULL, calls_lost INTEGER NOT NULL,
            best_score REAL, best_program_id INTEGER,
            flops REAL NOT NULL, prompt_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL,
            summary_json TEXT NOT NULL, updated_at REAL NOT NULL
        );
        """


def _m002_task_identity() -> str:
    """Version 2: the identity of the task a run is scored with (issue 12, item 1).

    ``runs.task`` holds the task's declared name; ``task_kind`` is ``builtin`` or
    ``file``; ``task_path`` the absolute path of a user task file and ``task_source``
    its text; ``task_version`` the basevolve version for a built-in task;
    ``task_sha256`` the identity compared on resume.  ``task_changes`` records every
    change a resume was allowed to make (``--allow-task-change``).  Runs stored before
    version 2 have NULL identity columns and are not checked.
    """
    return """
        ALTER TABLE runs ADD COLUMN task_kind TEXT;
        ALTER TABLE runs ADD COLUMN task_path TEXT;
        ALTER TABLE runs ADD COLUMN task_sha256 TEXT;
        ALTER TABLE runs ADD COLUMN task_version TEXT;
        ALTER TABLE runs ADD COLUMN task_source TEXT;
        CREATE TABLE task_changes (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            changed_at REAL NOT NULL,
            old_sha256 TEXT, new_sha256 TEXT NOT NULL,
            task_path TEXT, task_source TEXT
        );
        """


def _m003_solutions() -> str:
    """Version 3: the plain-data value of a run's best program, for pictures (issue 14).

    Why store the value: the dashboard must show the best solution's picture without
    running stored code (it is read-only), and values are small plain data (the sandbox
    already decoded them), so the run keeps the value it drew ``best.png`` from and any
    reader can redraw it with the task's trusted ``draw``.
    """
    return """
        CREATE TABLE solutions (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            program_id INTEGER NOT NULL REFERENCES programs(program_id),
            value_json TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, program_id)
        );
        """


def _m004_concurrency_and_purpose() -> str:
    """Version 4 (issues 9 and 10): decision quality and call purposes.

    * ``allocations.n_eligible``: how many arms were eligible at an ``ask`` (a decision
      with one eligible arm is no decision; ``decisions_with_choice`` summarises it);
    * ``calls.purpose`` (``mutation``, ``fix``, ``judge``, ``meta_prompt``, ``summary``)
      and ``calls.meta_json`` (the protocol's JSON-able proposal details);
    * ``calls.told_seq``: when a text reply (judge/meta) was handed to its protocol, so a
      resume replays it at the same point.  Older rows get ``mutation`` and NULLs.
    """
    return """
        ALTER TABLE allocations ADD COLUMN n_eligible INTEGER;
        ALTER TABLE calls ADD COLUMN purpose TEXT NOT NULL DEFAULT 'mutation';
        ALTER TABLE calls ADD COLUMN meta_json TEXT;
        ALTER TABLE calls ADD COLUMN told_seq INTEGER;
        UPDATE allocations SET n_eligible = (SELECT count(*) FROM json_each(eligible_json)
            WHERE json_each.value = 1) WHERE kind = 'ask' AND eligible_json IS NOT NULL;
        """


def _m005_evaluation_calls() -> str:
    """Version 5 (issue 15): the evaluation cost of text tasks.

    A ``prompt_optimization`` child is scored by asking an answering LLM every question
    of its QA set.  Those calls are *evaluation* cost, not mutation calls: one row each
    in ``eval_calls`` (tokens, FLOPs, latency, attempts, cache hit, the reply and the
    extracted answer with its score), summed per program in ``programs.eval_flops`` /
    ``programs.eval_tokens``.  ``cache_key`` (sha256 of the request and the sampling
    settings) lets a resumed run reuse stored answers.  Program tasks write no rows.
    """
    return """
        ALTER TABLE programs ADD COLUMN eval_flops REAL NOT NULL DEFAULT 0;
        ALTER TABLE programs ADD COLUMN eval_tokens INTEGER NOT NULL DEFAULT 0;
        CREATE TABLE eval_calls (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            program_id INTEGER NOT NULL REFERENCES programs(program_id),
            idx INTEGER NOT NULL,
            question_id TEXT,
            cache_key TEXT NOT NULL,
            cache_hit INTEGER NOT NULL,
            status TEXT NOT NULL,
            reply TEXT, answer TEXT, gold TEXT, correct REAL,
            prompt_tokens INTEGER NOT NULL DEFAULT 0, cached_tokens INTEGER NOT NULL DEFAULT 0,
            completion_tokens INTEGER NOT NULL DEFAULT 0,
            flops REAL NOT NULL DEFAULT 0, latency_s REAL, attempts INTEGER NOT NULL DEFAULT 0,
            error TEXT,
            PRIMARY KEY (program_id, idx)
        );
        CREATE INDEX eval_calls_run ON eval_calls(run_id, cache_key);
        """


def _m006_trust_and_artifacts() -> str:
    """Version 6 (issue 21): where each score was computed, and the evaluator's feedback.

    * ``programs.trust``: ``trusted-scorer`` (an ``entry()`` program's value scored in
      basevolve), ``trusted-evaluator`` (a function task: an evaluator in basevolve
      called the sandboxed program), ``evaluator-in-sandbox`` (an OpenEvolve task
      directory: its evaluator ran beside the program and could be tampered with) or
      ``not-executed`` (a text artifact).  Older rows are NULL.
    * ``programs.artifacts_json``: the evaluator's feedback (OpenEvolve's "artifacts":
      failing cases, notes, stderr), a JSON object of str -> str, shown to the LLM in the
      next prompt of this parent with ``--feedback artifacts``.
    """
    return """
        ALTER TABLE programs ADD COLUMN trust TEXT;
        ALTER TABLE programs ADD COLUMN artifacts_json TEXT;
        """


def _m007_models() -> str:
    """Version 7 (issue 25): several models in one run.

    * ``calls.model``: the name of the model that answered (was asked) the call, so its
      FLOPs, tokens and spend can be broken down per model.  Rows of older runs are
      NULL: they used the run's one model (``runs.model``).
    * ``calls.cost_usd``: the call's price in US dollars when its model has one.
    * ``model_events``: the per-call model decisions and their rewards (issue 25, part 2),
      as ``allocations`` holds the trajectory allocator's: ``ask`` (a decision, with the
      models eligible and the bandit's summary), ``tell`` (the reward of the call's
      child) and ``cancel`` (a call that never got a child).  Only runs with a model
      bandit write ``ask``/``tell`` rows; fixed weights and roles are stored as the
      call's ``model`` alone (their choice is a seeded function of the call).
    """
    return """
        ALTER TABLE calls ADD COLUMN model TEXT;
        ALTER TABLE calls ADD COLUMN cost_usd REAL;
        CREATE TABLE model_events (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('ask', 'tell', 'cancel')),
            call_index INTEGER NOT NULL,
            model TEXT NOT NULL,
            arm INTEGER NOT NULL,
            reward REAL,
            eligible_json TEXT,
            summary_json TEXT,
            created_at REAL NOT NULL,
            PRIMARY KEY (run_id, seq)
        );
        CREATE INDEX model_events_call ON model_events(run_id, call_index);
        """


def _m008_per_model_index() -> str:
    """Version 8 (issue 25): the per-model breakdown read from an index, not the rows.

    ``store/per_model.py`` sums each model's calls, tokens, FLOPs and dollars and maps
    every child to its call's model.  A call's row holds its prompt and reply, so the
    columns added since version 1 sit behind them on overflow pages: reading them for
    20,000 calls took ~190 ms (the dashboard's first view of such a run).  This covering
    index answers both reads from ~20 ms.
    """
    return """
        CREATE INDEX calls_per_model ON calls(run_id, model, seq, counted, status,
            prompt_tokens, cached_tokens, completion_tokens, flops, cost_usd);
        """


# Each migration returns one SQL script; ``migrate`` runs it inside one transaction
# together with the ``user_version`` bump, so a crash never leaves half a migration.
MIGRATIONS: tuple[Callable[[], str], ...] = (
    _m001_initial, _m002_task_identity, _m003_solutions, _m004_concurrency_and_purpose,
    _m005_evaluation_calls, _m006_trust_and_artifacts, _m007_models,
    _m008_per_model_index)
SCHEMA_VERSION = len(MIGRATIONS)


def inspect_file(path: Path) -> str:
    """Classify ``path`` without modifying it: ``"new"``, ``"basevolve"`` or raise.

    Opens the database read-only (URI ``mode=ro``) so a foreign file is never touched.
    """
    if not path.exists() or path.stat().st_size == 0:
        return "new"
    if path.is_dir():
        raise StoreError(f"store path {str(path)!r} is a directory; pass a file such as run.sqlite")
    with path.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        raise StoreError(
            f"{str(path)!r} is not a basevolve store (not an SQLite file); "
            "choose another --store path"
        )
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                return "new"
            if "basevolve_meta" not in tables:
                raise StoreError(
                    f"{str(path)!r} is an SQLite database but not a basevolve store; "
                    "choose another --store path"
                )
            row = con.execute(
                "SELECT value FROM basevolve_meta WHERE key = ?", (MARKER_KEY,)
            ).fetchone()
            version = con.execute("PRAGMA user_version").fetchone()[0]
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{str(path)!r} is not a readable basevolve store: {exc}") from None
    if row is None or row[0] != MARKER_VALUE:
        raise StoreError(f"{str(path)!r} has a foreign basevolve_meta table; not a basevolve store")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store {str(path)!r} has schema version {version}, newer than this basevolve "
            f"understands ({SCHEMA_VERSION}); upgrade basevolve"
        )
    return "basevolve"


def migrate(db: sqlite3.Connection) -> int:
    """Run every migration newer than the file's ``user_version``; return the new version."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    for number in range(version, SCHEMA_VERSION):
        script = MIGRATIONS[number]()
        try:
            db.executescript(f"BEGIN;\n{script}\nPRAGMA user_version = {number + 1};\nCOMMIT;")
        except sqlite3.Error:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION
