"""Every key of OpenEvolve's config schema: applied by basevolve, or named (issue 31, item 5).

OpenEvolve's ``Config`` (``openevolve/config.py`` of release 0.4.0, read as a reference)
has some 120 settings; a task directory's config may set any of them.  None is ever
silently ignored: :data:`APPLIED` says how basevolve applies a key, every other key the
file sets is named in **one** warning line at the start of the run and in ``tasks
--show`` (:meth:`ConfigOptions.warning`), with the flag that plays its part where there
is one.  Keys OpenEvolve does not know are named too (OpenEvolve ignores them).

The fitness rule (:func:`fitness_score`) is OpenEvolve 0.4.0's ``get_fitness_score``
(``openevolve/utils/metrics_utils.py``), reimplemented from its behaviour:
``combined_score`` when present and a number; else the mean of the numeric metrics that
are neither booleans (flags, not scores) nor NaN nor a MAP-Elites feature dimension
(``database.feature_dimensions``, default complexity and diversity); when that leaves
nothing, the mean of every numeric, non-boolean, non-NaN metric; none: 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from basevolve.records import Evaluation, Trust
from basevolve.tasks.openevolve_settings import fail, number, section

OPENEVOLVE_VERSION = "0.4.0"  # the release whose schema and fitness rule these follow
DEFAULT_MAX_CODE_LENGTH = 10_000
DEFAULT_FEATURES = ("complexity", "diversity")

#: key -> how basevolve applies it (the rest of the schema is named, not applied)
APPLIED: dict[str, str] = {
    "random_seed": "the run's seed unless --seed is given (--seed wins)",
    "language": "python (other languages: file_suffix)",
    "file_suffix": ".py",
    "diff_based_evolution": "SEARCH/REPLACE edits (true) or full rewrites (false), for "
                            "protocols with a mode (--protocol-param mode= wins)",
    "max_code_length": "a longer child is refused unevaluated, score 0 with the reason",
    "prompt.system_message": "the system message",
    "prompt.include_artifacts": "with evaluator.enable_artifacts: --feedback artifacts "
                                "(--feedback wins)",
    "evaluator.enable_artifacts": "with prompt.include_artifacts (see there)",
    "evaluator.timeout": "per evaluate/stage call; over basevolve's cap: clamped, warned",
    "evaluator.cascade_evaluation": "stage by stage when evaluate_stage1 exists",
    "evaluator.cascade_thresholds": "the cascade's thresholds",
    "evaluator.evaluator_args": "keyword arguments of evaluate()",
    "database.feature_dimensions": "left out of the fitness mean",
    "basevolve": "basevolve's own section: name, description, objectives, reference_point",
}

#: OpenEvolve's schema: section -> its keys ("" is the top level)
SCHEMA: dict[str, tuple[str, ...]] = {
    "": ("max_iterations", "checkpoint_interval", "log_level", "log_dir", "random_seed",
         "language", "file_suffix", "llm", "prompt", "database", "evaluator",
         "evolution_trace", "diff_based_evolution", "max_code_length",
         "enforce_evolve_blocks", "diff_pattern", "early_stopping_patience",
         "convergence_threshold", "early_stopping_metric", "max_tasks_per_child"),
    "prompt": ("template_dir", "system_message", "evaluator_system_message",
               "programs_as_changes_description", "system_message_changes_description",
               "initial_changes_description", "num_top_programs", "num_diverse_programs",
               "use_template_stochasticity", "template_variations", "use_meta_prompting",
               "meta_prompt_weight", "include_artifacts", "max_artifact_bytes",
               "artifact_security_filter", "suggest_simplification_after_chars",
               "include_changes_under_chars", "concise_implementation_max_lines",
               "comprehensive_implementation_min_lines", "diff_summary_max_line_len",
               "diff_summary_max_lines", "code_length_threshold"),
    "database": ("db_path", "in_memory", "log_prompts", "population_size", "archive_size",
                 "num_islands", "elite_selection_ratio", "exploration_ratio",
                 "exploitation_ratio", "diversity_metric", "feature_dimensions",
                 "feature_bins", "diversity_reference_size", "migration_interval",
                 "migration_rate", "random_seed", "artifacts_base_path",
                 "artifact_size_threshold", "cleanup_old_artifacts", "artifact_retention_days",
                 "max_snapshot_artifacts", "novelty_llm", "embedding_model",
                 "embedding_api_base", "similarity_threshold"),
    "evaluator": ("timeout", "max_retries", "memory_limit_mb", "cpu_limit",
                  "cascade_evaluation", "cascade_thresholds", "parallel_evaluations",
                  "distributed", "use_llm_feedback", "llm_feedback_weight", "enable_artifacts",
                  "max_artifact_storage", "evaluator_args"),
    "llm": ("api_base", "api_key", "name", "provider", "init_client", "weight",
            "system_message", "temperature", "top_p", "max_tokens", "timeout", "retries",
            "retry_delay", "random_seed", "reasoning_effort", "max_budget_usd",
            "max_ai_credits", "allow_all_tools", "manual_mode", "models", "evaluator_models",
            "primary_model", "primary_model_weight", "secondary_model",
            "secondary_model_weight"),
    "evolution_trace": ("enabled", "format", "include_code", "include_prompts", "output_path",
                        "buffer_size", "compress"),
}

#: sections named whole, with the flags that play their part
INSTEAD = {"llm": "--model/--base-url/--max-tokens", "database": "--protocol openevolve "
           "--protocol-param ...", "max_iterations": "--budget"}


def _keys(config: dict[str, Any]) -> list[str]:
    """The dotted keys ``config`` sets (one level into the known sections)."""
    keys = []
    for key, value in config.items():
        if key in SCHEMA and key and isinstance(value, dict):
            keys += [f"{key}.{sub}" for sub in value]
        else:
            keys.append(str(key))
    return keys


def unapplied(config: dict[str, Any]) -> tuple[str, ...]:
    """Every key ``config`` sets that basevolve does not apply (unknown ones marked)."""
    out = []
    for key in _keys(config):
        if key in APPLIED or key.split(".")[0] == "basevolve":
            continue
        head, _, sub = key.partition(".")
        known = (sub in SCHEMA.get(head, ())) if sub else key in SCHEMA[""]
        out.append(key if known else f"{key} (not OpenEvolve's)")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ConfigOptions:
    """The top-level and prompt/database settings a run applies (defaults: OpenEvolve's)."""

    config_name: str = "config.yaml"
    max_code_length: int = DEFAULT_MAX_CODE_LENGTH
    diff_based_evolution: bool = True
    include_artifacts: bool = True  # prompt.include_artifacts and evaluator.enable_artifacts
    random_seed: int | None = None  # only when the config gives one
    feature_dimensions: tuple[str, ...] = DEFAULT_FEATURES
    not_applied: tuple[str, ...] = ()

    def warning(self) -> str | None:
        """The one line naming what the config sets and basevolve does not apply."""
        if not self.not_applied:
            return None
        heads = sorted({k.split(".")[0] for k in self.not_applied} & set(INSTEAD))
        instead = "; ".join(f"{h}: {INSTEAD[h]}" for h in heads)
        return (f"{self.config_name}: not applied by basevolve: {', '.join(self.not_applied)}"
                + (f" (instead: {instead})" if instead else "") + " -- see docs/tasks.md")

    def refuse(self, code: str, initial: str, session: Any) -> Evaluation | None:
        """A child over ``max_code_length`` characters, refused unrun (as OpenEvolve);
        the initial program is never refused (OpenEvolve does not check it either)."""
        if len(code) <= self.max_code_length or code == initial:
            return None
        return Evaluation(
            score=0.0, valid=False, isolation=session.isolation, trust=Trust.IN_SANDBOX,
            error=f"code_too_long: the program has {len(code):,} characters, over "
                  f"max_code_length {self.max_code_length:,} ({self.config_name}); not "
                  "evaluated")


def _flag(path: Path, cfg: str, name: str, value: Any, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise fail(path, f"{cfg}: {name}={value!r} must be true or false")
    return value


def read_options(path: Path, config: dict[str, Any], cfg: str) -> ConfigOptions:
    """The checked settings of :class:`ConfigOptions`; one clear line for a bad value."""
    prompt, evaluator = section(path, config, "prompt", cfg), section(path, config,
                                                                      "evaluator", cfg)
    database = section(path, config, "database", cfg)
    length = config.get("max_code_length", DEFAULT_MAX_CODE_LENGTH)
    if not number(length) or isinstance(length, float) or length < 1:
        raise fail(path, f"{cfg}: max_code_length={length!r} must be a whole number of "
                   "characters >= 1")
    seed = config.get("random_seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                             or not 0 <= seed < 2**63):
        raise fail(path, f"{cfg}: random_seed={seed!r} must be a whole number >= 0")
    dims = database.get("feature_dimensions", list(DEFAULT_FEATURES))
    if not isinstance(dims, list) or not all(isinstance(d, str) for d in dims):
        raise fail(path, f"{cfg}: database.feature_dimensions={dims!r} must be a list of "
                   "metric names")
    artifacts = (_flag(path, cfg, "prompt.include_artifacts",
                       prompt.get("include_artifacts"), True)
                 and _flag(path, cfg, "evaluator.enable_artifacts",
                           evaluator.get("enable_artifacts"), True))
    diff = _flag(path, cfg, "diff_based_evolution", config.get("diff_based_evolution"), True)
    return ConfigOptions(cfg, int(length), diff, artifacts, seed, tuple(dims),
                         unapplied(config))


def fitness_score(metrics: dict[str, Any], feature_dimensions: tuple[str, ...] = ()) -> float:
    """OpenEvolve 0.4.0's fitness (module docstring); may be NaN or infinite."""
    if not metrics:
        return 0.0
    if "combined_score" in metrics:
        try:
            return float(metrics["combined_score"])
        except (TypeError, ValueError, OverflowError):
            pass
    scores = _numbers({k: v for k, v in metrics.items() if k not in feature_dimensions})
    scores = scores or _numbers(metrics)
    return sum(scores) / len(scores) if scores else 0.0


def _numbers(metrics: dict[str, Any]) -> list[float]:
    out = []
    for value in metrics.values():
        if isinstance(value, int | float) and not isinstance(value, bool):
            try:
                number_ = float(value)
            except OverflowError:
                continue
            if not math.isnan(number_):
                out.append(number_)
    return out


def initial_failure(task: Any, evaluation: Evaluation) -> str | None:
    """Why the run stops before its first LLM call: the initial program's evaluation
    failed (issue 31, item 9); None when it gave metrics (whatever the score)."""
    error = evaluation.error or ""
    if evaluation.valid or not error or error.startswith(("code_too_long", "bad_output")):
        return None  # scored (a fitness that is not finite is the program's result)
    quoted = " ".join(error.split())
    if quoted.startswith("scorer error:") and "TaskError: " in quoted:  # setup failed
        quoted = quoted.split("TaskError: ", 1)[1]
    quoted = quoted[:600]
    return (f"the initial program of task directory {str(task.directory.path)!r} could not "
            f"be evaluated, so no LLM call was made: {quoted}")


__all__ = ["APPLIED", "OPENEVOLVE_VERSION", "SCHEMA", "ConfigOptions", "fitness_score",
           "initial_failure", "read_options", "unapplied"]
