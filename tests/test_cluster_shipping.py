"""What travels to cluster workers, without a cluster: task folders and model files by digest,
unpacked once per node; and the errors a user meets before any cluster is reached."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine.cluster.shipping import NodeCache, Shipper, ShippingError, model_files, pack_folder
from engine.config import ConfigError, parse_config
from engine.tasks import load_task
from tests.conftest import write_task


class FakeStore:
    """Stands in for Ray's object store: put returns a key, get counts what is fetched."""

    def __init__(self) -> None:
        self.objects: dict[int, bytes] = {}
        self.gets = 0

    def put(self, data: bytes) -> int:
        self.objects[len(self.objects)] = data
        return len(self.objects) - 1

    def get(self, ref: int) -> bytes:
        self.gets += 1
        return self.objects[ref]


def test_equal_task_folders_pack_to_the_same_digest_whatever_their_times(tmp_path):
    a = write_task(tmp_path / "a", "t")
    b = write_task(tmp_path / "b", "t")
    os.utime(b / "instruction.md", (1, 1))
    assert pack_folder(a) == pack_folder(b)
    (b / "instruction.md").write_text("something else")
    assert pack_folder(a) != pack_folder(b)


def test_a_node_unpacks_each_task_once_and_runs_it_from_its_own_copy(tmp_path):
    store = FakeStore()
    task = load_task(write_task(tmp_path / "suite", "hello", setup="mkdir -p /app\nchmod 755 /app"))
    shipper = Shipper(store.put)
    shipped = shipper.task(task)
    assert shipper.task(task).folder is shipped.folder, "put in the object store once"

    node = NodeCache(tmp_path / "node", store.get)
    copy = node.task(shipped)
    again = node.task(shipper.task(task))
    assert store.gets == 1, "fetched once per node"
    assert copy.path == again.path and copy.path != task.path
    assert copy.name == task.name and copy.instruction == task.instruction
    assert (copy.path / "environment" / "setup.sh").read_text() == (task.path / "environment" / "setup.sh").read_text()
    assert (copy.path / "tests" / "test.sh").is_file() and (copy.path / "solution" / "solve.sh").is_file()
    assert not [p for p in (tmp_path / "node").iterdir() if p.name.startswith(".incoming")]


def test_a_checkpoint_travels_as_its_files_and_comes_back_as_a_spec_of_node_paths(tmp_path):
    store = FakeStore()
    base, lora = tmp_path / "m.gguf", tmp_path / "a.gguf"
    base.write_bytes(b"weights" * 100)
    lora.write_bytes(b"adapter")
    shipper = Shipper(store.put)
    shipped = shipper.model(f"gguf:{base}+lora={lora}")
    assert [f.name for f in shipped.files] == ["m.gguf", "a.gguf"]

    node = NodeCache(tmp_path / "node", store.get)
    spec = node.model(shipped)
    node_base, node_lora = spec.removeprefix("gguf:").split("+lora=")
    assert Path(node_base).read_bytes() == base.read_bytes() and Path(node_lora).read_bytes() == b"adapter"
    assert str(tmp_path / "node") in node_base

    # A new adapter is a new checkpoint; the base is not shipped again.
    lora.write_bytes(b"adapter after an update")
    updated = shipper.model(f"gguf:{base}+lora={lora}")
    assert updated.digest != shipped.digest
    assert updated.files[0] is shipped.files[0]
    node.model(updated)
    assert store.gets == 3  # base once, each adapter once


def test_the_bundled_model_is_never_shipped_only_its_adapter(tmp_path):
    lora = tmp_path / "a.gguf"
    lora.write_bytes(b"x")
    template, files = model_files(f"bundled:smollm2-135m+lora={lora}")
    assert template == "bundled:smollm2-135m+lora={0}" and files == [lora]
    assert model_files("bundled:smollm2-135m") == ("bundled:smollm2-135m", [])
    assert model_files("openai:http://h:1/v1#m")[1] == []
    with pytest.raises(ShippingError, match="GGUF"):
        model_files("hf:some/model")


def test_cluster_config_is_checked(tmp_path):
    config = parse_config('[cluster]\nengine = "ray"\naddress = "ray://head:10001"\nsandboxes_per_node = 4\n')
    assert config.cluster.engine == "ray" and config.cluster.sandboxes_per_node == 4
    with pytest.raises(ConfigError, match="cluster.engine"):
        parse_config('[cluster]\nengine = "slurm"\n')


def test_asking_for_a_cluster_without_ray_names_the_extra(tmp_path, monkeypatch):
    from trsi_tui.cli import cli

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails, as without the extra
    result = CliRunner().invoke(
        cli, ["--home", str(tmp_path / "h"), "eval", "--agent", "oracle", "--cluster", "local"], obj={}
    )
    assert result.exit_code == 1
    assert "pip install 'trsi-tui[ray]'" in result.output
    result = CliRunner().invoke(cli, ["--home", str(tmp_path / "h"), "cluster", "status"], obj={})
    assert result.exit_code == 1 and "trsi-tui[ray]" in result.output
