"""The OpenEvolve-directory part of ``basevolve tasks --show`` (issue 21, part 2; issue 31).

Split from :mod:`basevolve.cli.tasks_cmd`: which files were found (and which were named
with --program / --evaluator / --config), the stage functions found by parsing the
evaluator (never importing it here), the cascade, the timeout, the settings of the
config that a run applies and the one line naming those it does not.
"""

from __future__ import annotations

from typing import Any


def directory_details(task: Any) -> dict[str, Any]:
    """What ``tasks --show DIR`` lists for an OpenEvolve task directory (issue 21, part 2).

    Found without importing evaluator.py: its stage functions by parsing it
    (:func:`basevolve.tasks.openevolve_dir.evaluator_functions`).
    """
    d, st, opt = task.directory, task.settings, task.options
    named = d.files
    files = {**{k: len(v.encode()) for k, v in d.text_files.items()},
             **{k: len(v) for k, v in d.binary_files.items()}}
    return {
        "path": str(d.path),
        "files": [{"path": k, "bytes": files[k], "binary": k in d.binary_files}
                  for k in sorted(files)],
        "total_bytes": d.total_bytes,
        "skipped": list(d.skipped),
        "functions": list(st.functions),
        "cascade": st.cascade,
        "cascade_evaluation": st.cascade_evaluation,
        "cascade_thresholds": list(st.cascade_thresholds),
        "stages": list(st.stages),
        "timeout_s": st.timeout_s,
        "evaluator_args": sorted(st.evaluator_args),
        "system_message_from": (f"{named.config_name} prompt.system_message"
                                if task.config_system_message else "basevolve's default"),
        # issue 31: which files play which part, and what of the config a run applies
        "program": named.label(named.program), "evaluator": named.evaluator_name,
        "config": named.label(named.config) or None,
        "language": task.language, "initial_file": d.initial_file,  # issue 31, item 2
        "program_note": getattr(task, "program_note", None),  # a folder or a prompt
        "max_code_length": opt.max_code_length,
        "diff_based_evolution": opt.diff_based_evolution,
        "include_artifacts": opt.include_artifacts,
        "random_seed": opt.random_seed,
        "feature_dimensions": list(opt.feature_dimensions),
        "not_applied": list(opt.not_applied),
        "warnings": [w for w in (opt.warning(), *st.notes) if w],
    }


def show_directory(d: dict[str, Any]) -> None:
    """The OpenEvolve-directory part of ``tasks --show`` (plain text)."""
    x = d["directory"]
    print(f"kind            OpenEvolve task directory: its {x['evaluator']} runs inside the "
          "sandbox, next to the program")
    print(f"files named     program {x['program']}, evaluator {x['evaluator']}, config "
          f"{x['config'] or '(none: OpenEvolve defaults)'}")
    print(f"trust           {d['trust']} -- the program can tamper with the evaluator beside "
          "it (it cannot reach anything outside the sandbox)")
    print(f"functions       {', '.join(x['functions'])} (found in {x['evaluator']}, not "
          "imported)")
    if x["cascade"]:
        stages = " -> ".join(x["stages"])
        print(f"evaluation      cascade: {stages}; thresholds "
              f"{', '.join(f'{t:g}' for t in x['cascade_thresholds'])}")
    else:
        why = ("cascade_evaluation is false" if not x["cascade_evaluation"]
               else "no evaluate_stage1")
        print(f"evaluation      direct: evaluate(program_path) ({why})")
    if x["evaluator_args"]:
        print(f"evaluator args  {', '.join(x['evaluator_args'])} (passed to evaluate)")
    print(f"limits          {x['timeout_s']:g} s per evaluate/stage call (evaluator.timeout), "
          f"{d['memory_mb']} MB memory, {d['max_processes']} processes, {d['max_file_mb']} MB "
          "per file, no network")
    if x.get("program_note"):  # a folder or a prompt file (issue 31, items 3-4)
        print(f"program         {x['program_note']}")
    elif x["language"] != "python":
        print(f"language        {x['language']} ({x['initial_file']}; the host's toolchains "
              "build it)")
    else:
        print(f"entry function  {d['entry']}() -- the program's main function (first def of "
              "the EVOLVE block); it picks the program out of an LLM reply")
    print(f"system message  from {x['system_message_from']}")
    seed = x["random_seed"]
    print(f"run settings    max_code_length {x['max_code_length']:,} (longer children refused); "
          f"{'diffs' if x['diff_based_evolution'] else 'full rewrites'} (protocol mode="
          f"{'diff' if x['diff_based_evolution'] else 'full'}); "
          f"artifacts in prompts {'on' if x['include_artifacts'] else 'off'}; seed "
          f"{seed if seed is not None else 'from --seed'}; fitness without "
          f"{', '.join(x['feature_dimensions']) or 'no feature dimension'}")
    for warning in x["warnings"]:
        print(f"warning         {warning}")
    print(f"files           {len(x['files'])} sent to each evaluation's sandbox "
          f"({x['total_bytes']:,} bytes):")
    for f in x["files"]:
        print(f"  {f['path']}  {f['bytes']:,} bytes{' (binary)' if f['binary'] else ''}")
    for skipped in x["skipped"]:
        print(f"  skipped: {skipped}")


__all__ = ["directory_details", "show_directory"]
