"""The `trsi-tui` command line: the contract later stages and CI rely on."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from engine.store import Store
from tests.conftest import EXAMPLE_TASK, write_task
from trsi_tui.cli import cli


def invoke(*args: str, home: Path):
    return CliRunner().invoke(cli, ["--home", str(home), *args], obj={}, catch_exceptions=False)


def test_tasks_list_shows_the_builtin_suite(tmp_path: Path):
    r = invoke("tasks", "list", home=tmp_path)
    assert r.exit_code == 0
    assert "48 tasks" in r.output and "count-lines-1" in r.output


def test_tasks_check_passes_on_a_valid_task_and_writes_json(tmp_path: Path):
    out = tmp_path / "check.json"
    r = invoke("tasks", "check", str(EXAMPLE_TASK), "--json", str(out), home=tmp_path)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["valid"] is True
    assert data["tasks"][0]["oracle"]["success"] is True and data["tasks"][0]["nop"]["success"] is False


def test_tasks_check_fails_on_an_invalid_or_malformed_task(tmp_path: Path):
    suite = tmp_path / "suite"
    write_task(suite, "trivially-solved", solve="true", setup="echo hello > /app/out.txt")
    write_task(suite, "broken", instruction=None)
    write_task(suite, "fine")
    r = invoke("tasks", "check", str(suite), home=tmp_path)
    assert r.exit_code == 1
    assert "nop succeeded" in r.output and "missing instruction.md" in r.output
    assert "1/3 tasks valid" in r.output


def test_eval_json_contract_and_storage(tmp_path: Path):
    out = tmp_path / "eval.json"
    r = invoke("eval", "--tasks", str(EXAMPLE_TASK), "--agent", "nop", "--json", str(out), home=tmp_path)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    (result,) = data["results"]
    assert {"task", "success", "checks_passed", "checks_total", "reward"} <= result.keys()
    assert result["task"] == "count-lines" and result["success"] is False
    assert data["summary"]["success_rate"] == 0.0
    store = Store(tmp_path / "trsi.db")
    (run,) = store.runs.list()
    assert run.kind == "eval" and run.status == "finished"
    assert store.runs.episodes(run.id)[0].checks_total == 3


def test_eval_split_and_concurrency(tmp_path: Path):
    out = tmp_path / "eval.json"
    r = invoke("eval", "--agent", "oracle", "--split", "eval", "-j", "4", "--json", str(out), home=tmp_path)
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert len(data["results"]) == 16 and data["summary"]["success_rate"] == 1.0
    assert all(x["split"] == "eval" for x in data["results"])


def test_eval_task_option_runs_only_the_named_tasks_and_rejects_unknown_names(tmp_path: Path):
    out = tmp_path / "eval.json"
    r = invoke(
        "eval",
        "--agent",
        "oracle",
        "--task",
        "copy-file-1",
        "--task",
        "count-lines-1",
        "--json",
        str(out),
        home=tmp_path,
    )
    assert r.exit_code == 0, r.output
    assert sorted(x["task"] for x in json.loads(out.read_text())["results"]) == ["copy-file-1", "count-lines-1"]
    r = invoke("eval", "--agent", "oracle", "--task", "no-such-task", home=tmp_path)
    assert r.exit_code == 1 and "unknown task(s) no-such-task" in r.output


def test_unknown_backend_is_a_usage_error(tmp_path: Path):
    r = invoke("eval", "--agent", "oracle", "--backend", "podman", home=tmp_path)
    assert r.exit_code == 2 and "available backends: docker, local" in r.output


def test_broken_config_is_reported_not_a_traceback(tmp_path: Path):
    (tmp_path / "config.toml").write_text("[sandbox]\nbakend = 'local'\n")
    r = invoke("tasks", "list", home=tmp_path)
    assert r.exit_code == 1
    assert "sandbox.bakend: unknown key" in r.output and "Traceback" not in r.output


def test_config_init_then_show(tmp_path: Path):
    assert invoke("config", "init", home=tmp_path).exit_code == 0
    assert (tmp_path / "config.toml").exists()
    assert invoke("config", "init", home=tmp_path).exit_code == 1  # refuses to overwrite
    shown = invoke("config", "show", home=tmp_path)
    assert '"alpha": 0.5' in shown.output


def test_eval_reports_pass_at_k_with_an_interval_and_compares_runs(tmp_path: Path):
    out = tmp_path / "oracle.json"
    r = invoke(
        "eval",
        "--agent",
        "oracle",
        "--split",
        "eval",
        "--attempts",
        "2",
        "--seeds",
        "2",
        "-j",
        "4",
        "--json",
        str(out),
        home=tmp_path,
    )
    assert r.exit_code == 0, r.output
    summary = json.loads(out.read_text())["summary"]
    assert summary["episodes"] == 16 * 4
    assert summary["pass_at_1"] == 1.0 and summary["ci95"] == [1.0, 1.0]
    assert set(summary["pass_at_k"]) == {"1", "2", "3", "4"}
    assert "per task" in r.output and "pass@1 1.000" in r.output
    assert invoke("eval", "--agent", "nop", "--split", "eval", "-j", "4", home=tmp_path).exit_code == 0
    runs = [run.id for run in Store(tmp_path / "trsi.db").runs.list()]
    cmp = invoke("eval", "compare", runs[0], runs[1], home=tmp_path)
    assert cmp.exit_code == 0 and "16 shared tasks" in cmp.output and "difference +1.000" in cmp.output
    assert "no stored run" in invoke("eval", "compare", "nope", runs[0], home=tmp_path).output


def test_eval_without_agent_is_a_usage_error(tmp_path: Path):
    r = invoke("eval", home=tmp_path)
    assert r.exit_code == 2 and "--agent" in r.output


def test_rsr_run_refuses_models_it_cannot_train_and_a_changed_model_on_resume(tmp_path: Path):
    r = invoke("rsr", "run", "--round", "1", "--model", "openai:http://127.0.0.1:9/v1#m", home=tmp_path)
    assert r.exit_code == 1 and "needs transformers weights" in r.output
    r = invoke("rsr", "run", "--round", "1", "--model", "gguf:/no/such.gguf", home=tmp_path)
    assert r.exit_code == 1 and "GGUF file not found" in r.output
    Store(tmp_path / "trsi.db").rsr.put_round(
        1, model="hf:/some/model", tasks_path="x", settings="{}", stage="explore", checkpoint="", detail=""
    )
    r = invoke("rsr", "run", "--round", "1", "--model", "bundled:smollm2-135m", home=tmp_path)
    assert r.exit_code == 1 and "was started with model 'hf:/some/model'" in r.output
    r = invoke(
        "rsr",
        "run",
        "--round",
        "2",
        "--model",
        "bundled:smollm2-135m",
        "--harness",
        "xml-bash",
        "--tasks",
        str(tmp_path / "nowhere"),
        home=tmp_path,
    )
    assert r.exit_code == 1 and "no tasks" in r.output
    assert Store(tmp_path / "trsi.db").rsr.round(2) is None  # nothing recorded for a round that never started


def test_rpr_run_refuses_a_model_it_cannot_train_and_unknown_harnesses(tmp_path: Path):
    r = CliRunner().invoke(
        cli,
        ["--home", str(tmp_path), "rpr", "run", "--number", "1", "--model", "openai:http://127.0.0.1:9/v1#m"],
        obj={},
    )
    assert r.exit_code == 1 and "needs transformers weights" in r.output
    r = CliRunner().invoke(
        cli,
        ["--home", str(tmp_path), "rpr", "run", "--round", "1", "--model", "bundled:smollm2-135m", "--harness", "nope"],
        obj={},
    )
    assert r.exit_code == 2 and "nope" in r.output


def test_rpr_run_takes_the_stage_number_as_number_and_still_as_round(tmp_path: Path):
    """--number N is the stage (RPR-N), beside --rounds (its PPO rounds); --round is its old,
    hidden name, kept for one release."""
    help_text = invoke("rpr", "run", "--help", home=tmp_path).output
    assert "--number" in help_text and "--round " not in help_text
    r = invoke("rpr", "run", "--model", "bundled:smollm2-135m", home=tmp_path)
    assert r.exit_code == 2 and "Missing option '--number'" in r.output
    for flag in ("--number", "--round"):
        r = invoke("rpr", "run", flag, "0", "--model", "bundled:smollm2-135m", home=tmp_path)
        assert r.exit_code == 2 and "0 is not in the range 1<=x<=1000" in r.output, flag
        r = invoke("rpr", "run", flag, "1", "--model", "openai:http://127.0.0.1:9/v1#m", home=tmp_path)
        assert r.exit_code == 1 and "needs transformers weights" in r.output, flag


def test_pipeline_status_and_a_broken_pipeline_config(tmp_path: Path):
    r = invoke("pipeline", "status", home=tmp_path)
    assert r.exit_code == 0
    for stage in ("Base", "RSR-1", "RPR-1", "RSR-2", "RPR-2"):
        assert stage in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text("[rpr]\ncritic_warmup_rounds = -1\nkl_estimator = 'k9'\n")
    r = CliRunner().invoke(
        cli, ["--home", str(tmp_path), "pipeline", "run", "--headless", "--config", str(bad)], obj={}
    )
    assert r.exit_code == 1
    assert "rpr.critic_warmup_rounds" in r.output and "rpr.kl_estimator" in r.output
    r = CliRunner().invoke(cli, ["--home", str(tmp_path), "pipeline", "run", "--headless", "--seeds", "0,x"], obj={})
    assert r.exit_code == 1 and "'x' is not a seed" in r.output


def test_the_demo_preset_is_valid_and_sized_for_the_cpu():
    from engine.config import load_preset

    demo = load_preset("demo")
    assert demo.pipeline.model == "bundled:smollm2-135m" and demo.sandbox.backend == "local"
    assert demo.rpr.critic_warmup_rounds == 4 and demo.rpr.rounds >= 1
    assert demo.rsr.harnesses[0] == demo.rpr.harness == demo.pipeline.eval_harness == "fenced-bash-turns"
    # Several turns everywhere, a stop the model learns, RPR on fresh instances.
    assert demo.rsr.max_turns == demo.rpr.max_turns == demo.pipeline.eval_max_turns == 3
    assert demo.rsr.teach_stop and demo.rpr.fresh_instances and demo.rsr.unsolved_family_attempts > demo.rsr.attempts
    # On the curriculum, with every stage evaluated on at least 64 eval tasks, both tiers and the
    # held-out families among them.
    from engine.tasks.curriculum import FAMILIES, HELDOUT_FAMILIES, parse_suite_spec

    train, evaluation = parse_suite_spec(demo.tasks)
    assert evaluation * len(FAMILIES) >= 64 and demo.pipeline.eval_tasks == 0 and HELDOUT_FAMILIES
