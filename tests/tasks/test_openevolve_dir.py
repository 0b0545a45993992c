"""Loading OpenEvolve task directories, and OpenEvolve's rules (issue 21, part 2).

No sandbox here: what a directory is read as (files, config.yaml, stage functions found
by parsing evaluator.py, never importing it), every bad directory as one TaskError line,
the fitness and threshold rules on hand-made metrics, and the harness's conversion of an
evaluator's return value to plain data (the harness is our code; importing it here runs
nothing of a task).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from basevolve.config import RunConfig
from basevolve.errors import ConfigError, TaskError
from basevolve.records import Trust
from basevolve.tasks import load_task
from basevolve.tasks.identity import resolve_task_spec, task_identity
from basevolve.tasks.openevolve_cascade import fitness, merged, passes_threshold, stored
from basevolve.tasks.openevolve_dir import (
    DEFAULT_SYSTEM_MESSAGE,
    DEFAULT_THRESHOLDS,
    DEFAULT_TIMEOUT_S,
    MAX_TASK_BYTES,
    OpenEvolveDirTask,
)
from basevolve.tasks.openevolve_harness import plain

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
EVALUATOR = "def evaluate(program_path):\n    return {'x': 1.0}\n"
INITIAL = ("import math\n\n\ndef helper():\n    return 1\n\n\n# EVOLVE-BLOCK-START\n"
           "def solve(n):\n    return n\n# EVOLVE-BLOCK-END\n")


def make_dir(root: Path, evaluator: str = EVALUATOR, config: str | None = None,
             initial: str = INITIAL) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evaluator.py").write_text(evaluator)
    (root / "initial_program.py").write_text(initial)
    if config is not None:
        (root / "config.yaml").write_text(config)
    return root


def test_the_example_loads_with_its_settings():
    task = load_task(str(EXAMPLE))
    assert isinstance(task, OpenEvolveDirTask) and task.evaluation == "openevolve"
    assert task.name == "openevolve_dir" and task.entry == "search"
    assert task.timeout_s == 20.0 and task.trust is Trust.IN_SANDBOX
    assert task.settings.cascade and task.settings.cascade_thresholds == (0.2,)
    assert task.settings.stages == ("evaluate_stage1", "evaluate_stage2")
    assert task.settings.functions == ("evaluate", "evaluate_stage1", "evaluate_stage2")
    assert task.system_message.startswith("You are an expert in numerical optimisation.")
    assert task.config_system_message
    assert task.initial_program == (EXAMPLE / "initial_program.py").read_text()
    assert sorted(task.directory.text_files) == ["config.yaml", "evaluator.py",
                                                 "initial_program.py"]


def test_loading_never_imports_the_evaluator(tmp_path):
    marker = tmp_path / "imported"
    directory = make_dir(tmp_path / "d", evaluator=(
        f"open({str(marker)!r}, 'w').write('ran')\n\n\n"
        "if True:\n    def evaluate(program_path):\n        return {}\n"
        "try:\n    from somewhere import evaluate_stage1\nexcept ImportError:\n    pass\n"))
    task = load_task(str(directory))
    assert not marker.exists()  # parsed with ast, not imported
    assert task.settings.functions == ("evaluate", "evaluate_stage1")


def test_defaults_without_config_yaml(tmp_path):
    task = load_task(str(make_dir(tmp_path / "my task!")))
    assert task.name == "my_task"  # the directory's name, made safe
    assert task.entry == "solve"  # first def inside the EVOLVE block, not helper()
    assert task.timeout_s == DEFAULT_TIMEOUT_S  # OpenEvolve's defaults
    assert task.settings.cascade_evaluation and task.settings.cascade_thresholds == \
        DEFAULT_THRESHOLDS
    assert not task.settings.cascade and task.settings.stages == ("evaluate",)
    assert task.system_message == DEFAULT_SYSTEM_MESSAGE and not task.config_system_message


def test_config_overrides_name_and_openevolve_default_message(tmp_path):
    directory = make_dir(tmp_path / "circle_packing", config=(
        "prompt:\n  system_message: system_message\n"
        "evaluator:\n  evaluator_args: {size: 3}\n  cascade_evaluation: false\n"))
    task = load_task(str(directory))
    assert task.name == "circle_packing_dir"  # never a built-in task's name
    assert task.system_message == DEFAULT_SYSTEM_MESSAGE  # OpenEvolve's "use the default"
    assert task.settings.evaluator_args == {"size": 3}
    named = load_task(str(make_dir(tmp_path / "x", config="basevolve:\n  name: mine\n"
                                   "  description: Mine.\n")))
    assert named.name == "mine" and named.description == "Mine."


def test_skipped_and_binary_files(tmp_path):
    directory = make_dir(tmp_path / "d")
    (directory / "data").mkdir()
    (directory / "data" / "table.bin").write_bytes(b"\x00\xff\x10")
    (directory / "data" / "notes.txt").write_text("é")
    for skipped in (".git/HEAD", "__pycache__/x.pyc", "openevolve_output/log.txt",
                    "basevolve-out/r/summary.json"):
        (directory / skipped).parent.mkdir(parents=True, exist_ok=True)
        (directory / skipped).write_text("x")
    (directory / "link.py").symlink_to("/etc/hostname")
    task = load_task(str(directory))
    files = task.directory
    assert sorted(files.text_files) == ["data/notes.txt", "evaluator.py", "initial_program.py"]
    assert files.binary_files == {"data/table.bin": b"\x00\xff\x10"}
    assert files.skipped == ("link.py (symbolic link, not sent)",)


def test_identity_hashes_every_file(tmp_path):
    directory = make_dir(tmp_path / "d")
    (directory / "data.bin").write_bytes(b"\xff\x02")
    spec = resolve_task_spec(str(directory))
    assert spec == str(directory.resolve())
    first = task_identity(spec, load_task(spec))
    assert first.kind == "directory" and first.path == spec
    assert first.label == f"task directory {spec!r}"
    assert "=== evaluator.py ===\n" + EVALUATOR in first.source
    assert "data.bin === (2 bytes, binary" in first.source
    assert task_identity(spec, load_task(spec)).sha256 == first.sha256  # stable
    (directory / "data.bin").write_bytes(b"\xff\x03")  # a data file counts too
    second = task_identity(spec, load_task(spec))
    assert second.sha256 != first.sha256
    (directory / "extra.txt").write_text("")  # and a new file
    assert task_identity(spec, load_task(spec)).sha256 != second.sha256


BAD = [
    ("no evaluator.py", lambda d: (d / "evaluator.py").unlink(),
     "no evaluator: looked for evaluator.py; name yours with --evaluator FILE"),
    ("no initial program", lambda d: (d / "initial_program.py").unlink(),
     "no initial program: looked for initial_program.py; name yours with --program FILE"),
    ("no evaluate()", lambda d: (d / "evaluator.py").write_text("def evaluate_stage1(p):\n"
                                                                "    return {}\n"),
     "evaluator.py defines no evaluate(program_path) function"),
    ("evaluator syntax", lambda d: (d / "evaluator.py").write_text("def evaluate(:\n"),
     "evaluator.py has a syntax error at line 1"),
    ("initial syntax", lambda d: (d / "initial_program.py").write_text("def (:\n"),
     "initial_program.py has a syntax error at line 1"),
    ("bad yaml", lambda d: (d / "config.yaml").write_text("evaluator:\n  timeout: [1,\n"),
     "config.yaml is not valid YAML at line"),
    ("yaml not a mapping", lambda d: (d / "config.yaml").write_text("- 1\n- 2\n"),
     "config.yaml must be a mapping of settings, got a list"),
    ("section not a mapping", lambda d: (d / "config.yaml").write_text("evaluator: 5\n"),
     "config.yaml: evaluator must be a mapping, got 5"),
    ("bad thresholds", lambda d: (d / "config.yaml").write_text(
        "evaluator:\n  cascade_thresholds: [0.5, high]\n"),
     "evaluator.cascade_thresholds=[0.5, 'high'] must be a list of numbers"),
    ("empty thresholds", lambda d: ((d / "config.yaml").write_text(
        "evaluator:\n  cascade_thresholds: []\n"), (d / "evaluator.py").write_text(
        EVALUATOR + "def evaluate_stage1(p):\n    return {}\n")),
     "evaluator.cascade_thresholds is empty"),
    ("bad timeout", lambda d: (d / "config.yaml").write_text("evaluator:\n  timeout: -1\n"),
     "evaluator.timeout=-1 must be a number of seconds > 0"),
    ("bool cascade", lambda d: (d / "config.yaml").write_text(
        "evaluator:\n  cascade_evaluation: maybe\n"),
     "evaluator.cascade_evaluation='maybe' must be true or false"),
    ("bad message", lambda d: (d / "config.yaml").write_text("prompt:\n  system_message: 3\n"),
     "prompt.system_message must be text"),
    ("other language", lambda d: (d / "config.yaml").write_text(
        "language: rust\nfile_suffix: .rs\n"), "looked for initial_program.rs"),  # issue 31
    ("bad suffix", lambda d: (d / "config.yaml").write_text("file_suffix: .py/x\n"),
     "file_suffix='.py/x' must be a dot"),
    # a suffix is never a path: the host file it points at is never read as the program
    ("suffix path", lambda d: ((d / "config.yaml").write_text(
        "file_suffix: /../../secret.txt\n"), (d / "initial_program").mkdir(),
        (d.parent / "secret.txt").write_text("host secret")),
     "file_suffix='/../../secret.txt' must be a dot"),
    ("binary evaluator", lambda d: (d / "evaluator.py").write_bytes(b"\xff\xfe"),
     "evaluator.py is not UTF-8 text"),
    ("too large", lambda d: (d / "big.bin").write_bytes(b"\0" * (MAX_TASK_BYTES + 1)),
     "is too large: its files exceed 8 MB"),
    ("linked evaluator", lambda d: ((d / "real.py").write_text(EVALUATOR),
                                    (d / "evaluator.py").unlink(),
                                    (d / "evaluator.py").symlink_to(d / "real.py")),
     "evaluator.py is a symbolic link"),
]


@pytest.mark.parametrize(("what", "breaks", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_directories_are_one_clear_error(tmp_path, what, breaks, message):
    directory = make_dir(tmp_path / "d", config="")
    breaks(directory)
    with pytest.raises(TaskError) as info:
        load_task(str(directory))
    text = str(info.value)
    assert message in text and str(directory) in text and len(text.splitlines()) == 1


def test_unreadable_file_is_one_clear_error(tmp_path, monkeypatch):
    directory = make_dir(tmp_path / "d")
    (directory / "secret.dat").write_text("x")
    read = Path.read_bytes

    def refuse(self: Path) -> bytes:  # as an unreadable file answers (we are root here)
        if self.name == "secret.dat":
            raise PermissionError(13, "Permission denied")
        return read(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(TaskError, match=r"cannot read secret\.dat: Permission denied"):
        load_task(str(directory))


def test_task_params_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="takes no --task-param"):
        load_task(str(make_dir(tmp_path / "d")), {"size": "3"})


# ------------------------------------------------------------------ OpenEvolve's rules
def test_fitness_prefers_combined_score_else_mean_of_numbers():
    assert fitness({"combined_score": 0.25, "a": 9.0}) == 0.25
    # booleans are flags, not scores (OpenEvolve 0.4.0; issue 31, item 7)
    assert fitness({"a": 0.5, "b": 1.0, "ok": True, "note": "x"}) == pytest.approx(0.75)
    assert fitness({"a": float("nan"), "b": 0.5}) == 0.5
    assert fitness({"combined_score": "high", "a": 0.5}) == 0.5  # not a number: mean
    assert fitness({}) == 0.0 and fitness({"note": "text"}) == 0.0
    assert fitness({"error": 0.0, "a": 1.0}) == 0.5  # 'error' counts in the fitness


def test_threshold_skips_error_and_merge_keeps_numbers():
    assert passes_threshold({"combined_score": 0.5, "a": 0.0}, 0.5)
    assert not passes_threshold({"combined_score": 0.49, "a": 1.0}, 0.5)
    assert passes_threshold({"a": 1.0, "error": 0.0}, 0.9)  # mean without 'error'
    assert not passes_threshold({}, 0.0) and not passes_threshold({"note": "x"}, -1.0)
    assert merged({"a": 1, "error": 0.0, "t": "x"}, {"a": 2.0, "ok": True}) == {
        "a": 2.0, "ok": 1.0}


def test_stored_keeps_finite_numbers_as_metrics_and_the_rest_as_artifacts():
    metrics, artifacts = stored({"a": 1, "ok": False, "big": 10**400, "inf": float("inf"),
                                 "note": "t"}, {"log": "x"})
    assert metrics == {"a": 1.0, "ok": 0.0}
    assert artifacts == {"log": "x", "metric.big": str(10**400), "metric.inf": "inf",
                         "metric.note": "t"}


@dataclass
class _Result:  # shaped like OpenEvolve's EvaluationResult
    metrics: dict
    artifacts: dict = field(default_factory=dict)


def test_the_harness_returns_plain_data():
    np = pytest.importorskip("numpy")
    out = plain(_Result({"a": np.float32(0.5), "n": np.int64(3), "b": np.bool_(True),
                         "obj": object, "s": "x" * 30_000},
                        {"bin": b"\xff", "text": b"ok", "num": 3}))
    assert out["kind"] == "result"
    assert out["metrics"]["a"] == 0.5 and type(out["metrics"]["a"]) is float
    assert out["metrics"]["n"] == 3 and out["metrics"]["b"] is True
    assert out["metrics"]["obj"] == str(object) and len(out["metrics"]["s"]) < 20_010
    assert out["artifacts"] == {"bin": "<1 bytes of binary data>", "text": "ok", "num": "3"}
    assert plain({"x": 1}) == {"kind": "dict", "metrics": {"x": 1}, "artifacts": {}}
    assert plain([1, 2]) == {"kind": "other", "type": "list"}
    many = plain({f"k{i}": i for i in range(300)})
    assert len(many["metrics"]) == 257 and "basevolve.dropped" in many["metrics"]


# ------------------------------------------------------------------ issue 31: config keys
def test_feature_dimensions_of_the_config_leave_the_fitness(tmp_path):
    task = load_task(str(make_dir(tmp_path / "d", config=(
        "database:\n  feature_dimensions: [speed]\n"))))
    assert task.options.feature_dimensions == ("speed",)
    metrics = {"score": 0.5, "speed": 10.0, "complexity": 4.0}
    assert task.fitness(metrics) == pytest.approx((0.5 + 4.0) / 2)  # complexity counts now
    default = load_task(str(make_dir(tmp_path / "e")))
    assert default.fitness(metrics) == pytest.approx((0.5 + 10.0) / 2)
    # the example: {"score": 0.5, "complexity": 10} is 0.5, as in OpenEvolve
    assert default.fitness({"score": 0.5, "complexity": 10}) == 0.5
    assert default.fitness({"combined_score": 0.25, "score": 0.5}) == 0.25
    assert default.fitness({"complexity": 3.0, "diversity": 1.0}) == 2.0  # nothing else


def test_cascade_evaluation_false_calls_evaluate_only(tmp_path):
    evaluator = EVALUATOR + "\n\ndef evaluate_stage1(program_path):\n    return {'x': 0.1}\n"
    on = load_task(str(make_dir(tmp_path / "on", evaluator=evaluator)))
    assert on.settings.cascade and on.settings.stages == ("evaluate_stage1",)
    off = load_task(str(make_dir(tmp_path / "off", evaluator=evaluator,
                                 config="evaluator:\n  cascade_evaluation: false\n")))
    assert not off.settings.cascade and off.settings.stages == ("evaluate",)


def test_max_code_length_refuses_longer_children_but_not_the_initial_program(tmp_path):
    task = load_task(str(make_dir(tmp_path / "d", config="max_code_length: 30\n")))

    class Session:  # what the refusal reads of the sandbox session (nothing is run)
        isolation = "bwrap"

    assert len(INITIAL) > 30 and task.options.refuse(INITIAL, INITIAL, Session()) is None
    refused = task.options.refuse("x = 1\n" * 10, INITIAL, Session())
    assert refused is not None and not refused.valid and refused.score == 0.0
    assert refused.error == ("code_too_long: the program has 60 characters, over "
                             "max_code_length 30 (config.yaml); not evaluated")
    assert task.options.refuse("x = 1\n", INITIAL, Session()) is None


def test_an_over_long_timeout_is_clamped_with_a_note(tmp_path):
    from basevolve.sandbox.config import MAX_TIMEOUT_S

    task = load_task(str(make_dir(tmp_path / "d", config="evaluator:\n  timeout: 180000\n")))
    assert task.timeout_s == MAX_TIMEOUT_S / 8
    assert task.settings.notes == (f"config.yaml: evaluator.timeout=180000 s is clamped to "
                                   f"basevolve's cap of {MAX_TIMEOUT_S / 8:g} s per "
                                   "evaluate/stage call",)


def test_unapplied_keys_are_named_in_one_line(tmp_path):
    task = load_task(str(make_dir(tmp_path / "d", config=(
        "max_iterations: 5\nrandom_seed: 3\nllm:\n  models: []\n  temperature: 0.2\n"
        "database:\n  num_islands: 2\n  feature_dimensions: [a]\nmine: 1\n"
        "evaluator:\n  timeout: 5\n  max_retries: 2\n"))))
    assert task.options.not_applied == (
        "max_iterations", "llm.models", "llm.temperature", "database.num_islands",
        "mine (not OpenEvolve's)", "evaluator.max_retries")
    line = task.options.warning()
    assert line is not None and "\n" not in line
    assert line.startswith("config.yaml: not applied by basevolve: max_iterations, llm.models")
    assert "database: --protocol openevolve" in line and "llm: --model" in line
    assert load_task(str(make_dir(tmp_path / "e", config="random_seed: 1\n"))
                     ).options.warning() is None


@pytest.mark.parametrize(("config", "message"), [
    ("max_code_length: lots\n", "max_code_length='lots' must be a whole number"),
    ("random_seed: -1\n", "random_seed=-1 must be a whole number >= 0"),
    ("database:\n  feature_dimensions: 3\n", "database.feature_dimensions=3 must be a list"),
    ("prompt:\n  include_artifacts: maybe\n", "prompt.include_artifacts='maybe' must be true"),
    ("diff_based_evolution: 1\n", "diff_based_evolution=1 must be true or false"),
])
def test_bad_config_values_are_one_line(tmp_path, config, message):
    with pytest.raises(TaskError) as info:
        load_task(str(make_dir(tmp_path / "d", config=config)))
    assert message in str(info.value) and len(str(info.value).splitlines()) == 1


def test_apply_task_config_to_a_protocol_without_a_mode(tmp_path):
    from basevolve.engine.task_config import apply_task_config

    directory = make_dir(tmp_path / "d", config="random_seed: 9\n")
    cfg = RunConfig(task=str(directory), budget=2, protocol="codeevolve")
    task = load_task(str(directory))
    new, lines = apply_task_config(cfg, task, set())
    assert new.seed == 9 and new.feedback == "artifacts" and "mode" not in new.protocol_params
    assert any("diff_based_evolution (diff) is not applied: protocol 'codeevolve'" in line
               for line in lines)
    same, _ = apply_task_config(cfg, task, {"seed", "feedback"})
    assert same.seed == 0 and same.feedback == "none"
    builtin = RunConfig(task="circle_packing", budget=2)
    assert apply_task_config(builtin, load_task("circle_packing"), set()) == (builtin, [])
