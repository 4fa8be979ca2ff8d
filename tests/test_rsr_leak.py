"""The deterministic leak scan: runbooks quoting tests, the solution or a canary are caught."""

from __future__ import annotations

from engine.rsr.leak import protected_for, scan
from engine.tasks.canary import CANARY
from tests.conftest import EXAMPLE_TASK

OWN_COMMANDS = "wc -l < /app/input.txt > /app/count.txt\ncat /app/count.txt\n5\n"
CLEAN = """# Goal
Write the number of lines of /app/input.txt to /app/count.txt.
## Steps
1. `wc -l < /app/input.txt > /app/count.txt` (no output expected)
2. `cat /app/count.txt` shows the number.
## Check
The file holds one number.
"""


def test_a_runbook_quoting_a_verifier_check_is_caught():
    leaky = CLEAN + '\nThe grader runs test "$(tr -d "[:space:]" < /app/count.txt)" = 5 so write 5.\n'
    report = scan(leaky, protected_for(EXAMPLE_TASK, allowed=OWN_COMMANDS))
    assert report.leaked and report.score > 0
    assert any("tr -d" in m for m in report.matches)


def test_the_canary_is_always_a_leak_with_score_one():
    for canary in (CANARY, "example-0d4e"):  # the suite's canary, and the task's own canary line
        report = scan(CLEAN + f"\n{canary}\n", protected_for(EXAMPLE_TASK, allowed=OWN_COMMANDS))
        assert report.leaked and report.score == 1.0 and canary in report.matches


def test_commands_the_model_found_itself_are_not_a_leak_even_if_the_solution_has_them():
    report = scan(CLEAN, protected_for(EXAMPLE_TASK, allowed=OWN_COMMANDS))
    assert not report.leaked and report.score == 0.0


def test_the_same_command_is_a_leak_when_the_model_never_typed_it():
    solution = (EXAMPLE_TASK / "solution" / "solve.sh").read_text().strip().splitlines()[-1]
    runbook = f"# Goal\nCount lines.\n## Steps\n1. `{solution}`\n"
    report = scan(runbook, protected_for(EXAMPLE_TASK, allowed="ls /app"))
    assert report.leaked and any(solution.strip() in m or m in solution for m in report.matches)


def test_verifier_output_of_the_source_episode_is_protected():
    output = "passed count_file_exists\nfailed count_is_5 expected 5 got 4 in /app/count.txt"
    runbook = CLEAN + "\nNote: failed count_is_5 expected 5 got 4 in /app/count.txt\n"
    report = scan(runbook, protected_for(EXAMPLE_TASK, verifier_output=output, allowed=OWN_COMMANDS))
    assert report.leaked
