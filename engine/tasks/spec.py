"""A task as a generator writes it: instruction, setup, reference solution and shell checks.

`write_task` lays a `TaskSpec` out in the native layout (task.toml, instruction.md,
environment/setup.sh, solution/solve.sh, tests/test.sh). The verifier runs each check as one
CTRF test, writes reward.txt (1 only when every check passes) and carries the canary string.
Used by the built-in suite (builtin_suite.py, run by assets/generate.py) and the curriculum
(curriculum.py), whose families are in engine/tasks/families/.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from engine.tasks.canary import CANARY

# Names and words the generated tasks are built from.
WORDS = (
    "amber",
    "birch",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pepper",
    "quartz",
    "raven",
    "sierra",
    "tundra",
    "umber",
    "violet",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
)


def q(text: str) -> str:
    """Single-quote for bash."""
    return "'" + text.replace("'", "'\\''") + "'"


@dataclass
class TaskSpec:
    name: str
    instruction: str
    setup: str
    solve: str
    checks: list[tuple[str, str]]
    difficulty: str
    category: str
    tags: list[str] = field(default_factory=list)
    agent_timeout: int = 180
    extra_test_files: dict[str, str] = field(default_factory=dict)


def test_script(spec: TaskSpec) -> str:
    lines = [
        "#!/bin/bash",
        f"# {CANARY}",
        "# This file must never appear in training data or runbooks.",
        f"# Verifier for {spec.name}: each check is one CTRF test; reward.txt is 1 only when all pass.",
        "mkdir -p /logs/verifier",
        'pass=0; total=0; items=""',
        "check() {",
        "  total=$((total+1))",
        '  if timeout 30 bash -c "$2" >/dev/null 2>&1; then st=passed; pass=$((pass+1)); else st=failed; fi',
        '  echo "$st $1"',
        '  items="$items{\\"name\\":\\"$1\\",\\"status\\":\\"$st\\"},"',
        "}",
    ]
    lines += [f"check {name} {q(cmd)}" for name, cmd in spec.checks]
    lines += [
        'printf \'{"results":{"tool":{"name":"bash"},"summary":{"tests":%d,"passed":%d,"failed":%d},'
        '"tests":[%s]}}\\n\' \\',
        '  "$total" "$pass" "$((total-pass))" "${items%,}" > /logs/verifier/ctrf.json',
        '[ "$pass" -eq "$total" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt',
        "",
    ]
    return "\n".join(lines)


def task_toml(spec: TaskSpec, family: str, split: str, tier: str | None = None, heldout: bool | None = None) -> str:
    """The task.toml; a curriculum task also carries its family's tier and whether it is held out."""
    tags = ", ".join(f'"{t}"' for t in spec.tags)
    metadata = [
        f'difficulty = "{spec.difficulty}"',
        f'category = "{spec.category}"',
        f"tags = [{tags}]",
        f'family = "{family}"',
        f'split = "{split}"',
        *([f'tier = "{tier}"'] if tier is not None else []),
        *([f"heldout = {str(heldout).lower()}"] if heldout is not None else []),
    ]
    return textwrap.dedent(f"""\
        version = "1.0"

        [metadata]
        {{metadata}}

        [agent]
        timeout_sec = {spec.agent_timeout}

        [verifier]
        timeout_sec = 60

        [environment]
        cpus = 1
        memory_mb = 512
        allow_internet = false
        """).replace("{metadata}", "\n".join(metadata))


def write_task(
    spec: TaskSpec, family: str, split: str, dest: Path, *, tier: str | None = None, heldout: bool | None = None
) -> None:
    d = dest / split / spec.name
    (d / "environment").mkdir(parents=True)
    (d / "solution").mkdir()
    (d / "tests").mkdir()
    (d / "task.toml").write_text(task_toml(spec, family, split, tier, heldout))
    (d / "instruction.md").write_text(spec.instruction)
    (d / "environment" / "setup.sh").write_text(
        "#!/bin/bash\n# Runs as root in the sandbox before the agent starts.\nset -e\n" + spec.setup
    )
    (d / "solution" / "solve.sh").write_text("#!/bin/bash\nset -e\n" + spec.solve)
    (d / "tests" / "test.sh").write_text(test_script(spec))
    for p in (d / "environment" / "setup.sh", d / "solution" / "solve.sh", d / "tests" / "test.sh"):
        p.chmod(0o755)
