from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import DEFAULT_CONFIG_TOML, Config, ConfigError, load_config, parse_config
from engine.config.paths import resolve_paths


def test_defaults_and_the_commented_template_agree():
    assert parse_config(DEFAULT_CONFIG_TOML) == Config()


def test_missing_file_means_defaults(tmp_path: Path):
    assert load_config(tmp_path / "config.toml") == Config()


def test_unknown_key_names_the_file_and_key(tmp_path: Path):
    f = tmp_path / "config.toml"
    f.write_text("[reward]\nalfa = 0.3\n")
    with pytest.raises(ConfigError) as exc:
        load_config(f)
    assert str(f) in str(exc.value) and "reward.alfa: unknown key" in str(exc.value)


def test_alpha_must_stay_below_one():
    with pytest.raises(ConfigError, match="reward.alpha"):
        parse_config("[reward]\nalpha = 1.0\n")


def test_bad_toml_and_bad_types():
    with pytest.raises(ConfigError, match="not valid TOML"):
        parse_config("[eval\n")
    with pytest.raises(ConfigError, match="eval.concurrency"):
        parse_config("[eval]\nconcurrency = 'many'\n")


def test_home_overrides_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("TRSI_HOME", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    p = resolve_paths()
    assert p.config_file == tmp_path / "cfg" / "trsi-tui" / "config.toml"
    assert p.database == tmp_path / "data" / "trsi-tui" / "trsi.db"
    monkeypatch.setenv("TRSI_HOME", str(tmp_path / "env-home"))
    assert resolve_paths().database == tmp_path / "env-home" / "trsi.db"
    assert resolve_paths(tmp_path / "flag").config_file == tmp_path / "flag" / "config.toml"


def test_logging_goes_to_the_data_dirs_log_file_and_library_chatter_stays_off_the_console(tmp_path, capsys):
    import logging
    import warnings

    from engine.config.logs import LOG_FILE, setup_logging

    logging.captureWarnings(False)  # an earlier test's engine may have captured them already
    path = setup_logging(tmp_path / "logs")
    try:
        logging.getLogger("engine.rollout.episode").error("engine record")
        logging.getLogger("transformers.modeling_utils").warning("Loading weights: 100%")
        warnings.warn("a FutureWarning from a library", FutureWarning, stacklevel=1)
        for handler in logging.getLogger().handlers:
            handler.flush()
        text = path.read_text()
        assert path.name == LOG_FILE and path.parent == tmp_path / "logs"
        assert "engine record" in text and "Loading weights" in text and "a FutureWarning" in text
        captured = capsys.readouterr()
        assert "Loading weights" not in captured.err + captured.out
        assert "FutureWarning" not in captured.err + captured.out
    finally:
        logging.captureWarnings(False)
        root = logging.getLogger()
        for handler in list(root.handlers):
            if handler.__class__.__name__ == "_LogFile":
                root.removeHandler(handler)
                handler.close()
        import engine.config.logs

        engine.config.logs._configured = None  # noqa: SLF001 - the next test's home gets its own file


def test_training_seeds_parse_and_bad_ones_are_refused():
    from engine.config import ConfigError, parse_config
    from engine.pipeline.lineage import Lineage, parse_seeds, parse_stage_key, stored_seeds
    from engine.store.records import StageRecord

    assert parse_seeds("0,1,2") == [0, 1, 2] and parse_seeds("0-2, 5") == [0, 1, 2, 5]
    for bad in ("", "a", "1,x", "200"):
        with pytest.raises(ValueError):
            parse_seeds(bad)
    assert parse_config("[pipeline]\nseeds = [0, 1, 1]").pipeline.training_seeds() == [0, 1]
    assert parse_config("[pipeline]\nseed = 3").pipeline.training_seeds() == [3]
    with pytest.raises(ConfigError, match="seeds"):
        parse_config("[pipeline]\nseeds = [-1]")
    # Seed 0 keeps the plain names, so a single-seed store reads as before.
    assert (Lineage(0).stage_key("RSR-1"), Lineage(0).round_id(2)) == ("RSR-1", 2)
    assert (Lineage(2).stage_key("RPR-1"), Lineage(2).round_id(1), Lineage(2).stage_key("Base")) == (
        "RPR-1 seed 2",
        201,
        "Base",
    )
    # A stored stage name reads back as its stage and seed; other names are no stage.
    for seed in (0, 2):
        for stage in ("RSR-1", "RPR-2"):
            assert parse_stage_key(Lineage(seed).stage_key(stage)) == (stage, seed)
    for other in ("RSR-3", "RSR-1 seed ", "RSR-1 seed x", "Base-2"):
        assert parse_stage_key(other) is None
    stored = {key: StageRecord(key, "done") for key in ("Base", "RSR-1 seed 2", "RPR-1 seed 2", "odd")}
    assert stored_seeds(stored) == [2] and stored_seeds({**stored, "RSR-1": StageRecord("RSR-1", "done")}) == [0, 2]
