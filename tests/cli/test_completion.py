"""Tab completes commands, options, workflow keys and env names in bash, zsh and fish.

Each shell's script (`_N8NLOCK_COMPLETE=<shell>_source n8nlock`) runs n8nlock with
`_N8NLOCK_COMPLETE=<shell>_complete` and the words typed so far; most tests make that call
directly, a few source the script in the real shell.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from n8n_lockkit.cli import main
from n8n_lockkit.primitives.catalogue import PRIMITIVES
from tests.conftest import Invoke, explain

N8NLOCK = Path(sys.executable).parent / "n8nlock"


def _taking(option: str) -> list[str]:
    return sorted(
        name
        for name, command in main.commands.items()
        if any(option in param.opts for param in command.params)
    )


# `init --env` names the env files it creates: there is nothing to complete.
ENV_COMMANDS = [name for name in _taking("--env") if name != "init"]


@pytest.fixture
def keyed(workspace: Path, invoke: Invoke) -> Path:
    """A workspace with workflows orders, order_sync, invoices and Sync_1, and envs dev and
    prod."""
    for key in ("orders", "order_sync", "invoices"):
        (workspace / "workflows" / f"{key}.template.json").write_text("{}")
    # as n8n names a download: its key is Sync_1 (docs/concepts.md#workflow-files)
    (workspace / "workflows" / "Sync (1).json").write_text("{}")
    result = invoke("init", workspace, "--env", "prod")
    assert result.exit_code == 0, explain(result)
    return workspace


Complete = Callable[..., list[str]]


@pytest.fixture
def complete(monkeypatch: pytest.MonkeyPatch) -> Complete:
    """The values n8nlock offers for the last of `words` (an empty last word: end with " "),
    typed in folder `cwd`."""

    def run(words: str, cwd: Path, shell: str = "bash") -> list[str]:
        parts = words.split(" ")
        env = {
            "_N8NLOCK_COMPLETE": f"{shell}_complete",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(parts) - 1) if shell != "fish" else parts[-1],
        }
        monkeypatch.chdir(cwd)
        result = CliRunner().invoke(main, [], env=env, prog_name="n8nlock")
        assert result.exit_code == 0, explain(result)
        assert result.stderr == ""
        lines = [line for line in result.stdout.splitlines() if line]
        if shell == "zsh":  # type, value, help: three lines each
            return lines[1::3]
        return [line.split(",", 1)[1].split("\t")[0] for line in lines]  # "type,value" lines

    return run


@pytest.mark.parametrize("command", _taking("--workflow-key"))
def test_workflow_key_completes_the_key_of_every_workflow_file(
    keyed: Path, command: str, complete: Complete
) -> None:
    assert complete(f"n8nlock {command} --workflow-key ", keyed) == [
        "Sync_1",
        "invoices",
        "order_sync",
        "orders",
    ]
    assert complete(f"n8nlock {command} --workflow-key ord", keyed) == ["order_sync", "orders"]


def test_push_completes_keys_as_arguments(keyed: Path, complete: Complete) -> None:
    assert complete("n8nlock push --env dev in", keyed) == ["invoices"]


def test_the_commands_that_read_an_env_are_the_ones_completed() -> None:
    assert {"validate", "push", "create-lock", "locks", "upgrade"} <= set(ENV_COMMANDS)
    assert _taking("--workflow-key") == [
        "add-debounce",
        "add-dedupe",
        "add-lock-to-workflow",
        "add-rate-limit",
        "forget",
        "unwrap",
    ]


@pytest.mark.parametrize("command", ENV_COMMANDS)
def test_env_completes_the_env_files(keyed: Path, command: str, complete: Complete) -> None:
    assert complete(f"n8nlock {command} --env ", keyed) == ["dev", "prod"]
    assert complete(f"n8nlock {command} --env p", keyed) == ["prod"]


def test_completion_reads_the_workspace_the_command_line_names(
    keyed: Path, tmp_path: Path, complete: Complete
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert complete(f"n8nlock --workspace {keyed} validate --env ", elsewhere) == ["dev", "prod"]
    assert complete(f"n8nlock -w {keyed} add-rate-limit --workflow-key inv", elsewhere) == [
        "invoices"
    ]


def test_completion_from_a_subfolder_finds_the_workspace(keyed: Path, complete: Complete) -> None:
    assert complete("n8nlock validate --env d", keyed / "workflows") == ["dev"]


def test_outside_a_workspace_nothing_is_offered_and_nothing_is_printed(
    tmp_path: Path, complete: Complete
) -> None:
    assert complete("n8nlock validate --env ", tmp_path) == []
    assert complete("n8nlock add-lock-to-workflow --workflow-key ", tmp_path) == []


def test_commands_and_options_complete(keyed: Path, complete: Complete) -> None:
    assert "add-lock-to-workflow" in complete("n8nlock add", keyed)
    assert complete("n8nlock add-rate-limit --on-denied pa", keyed) == ["passthrough"]
    assert "stop" in complete("n8nlock add-rate-limit --on-denied ", keyed)


def test_copy_primitive_completes_the_primitives(keyed: Path, complete: Complete) -> None:
    offered = complete("n8nlock copy-primitive lock_", keyed)
    assert offered == [key for key in PRIMITIVES if key.startswith("lock_")]
    assert "lock_acquisition" in offered and "rate_limit_check" not in offered


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_get_the_same_values(keyed: Path, shell: str, complete: Complete) -> None:
    assert complete("n8nlock add-lock-to-workflow --workflow-key or", keyed, shell) == [
        "order_sync",
        "orders",
    ]
    assert complete("n8nlock push --env ", keyed, shell) == ["dev", "prod"]


@pytest.mark.parametrize(
    ("shell", "function"),
    [("bash", "_n8nlock_completion"), ("zsh", "_n8nlock_completion"), ("fish", "complete")],
)
def test_each_shell_gets_a_script_to_source(shell: str, function: str) -> None:
    result = CliRunner().invoke(
        main, [], env={"_N8NLOCK_COMPLETE": f"{shell}_source"}, prog_name="n8nlock"
    )
    assert result.exit_code == 0, explain(result)
    assert function in result.stdout
    assert f"_N8NLOCK_COMPLETE={shell}_complete" in result.stdout


# What a user puts in ~/.bashrc, ~/.zshrc and ~/.config/fish/completions/n8nlock.fish, then a
# Tab after `n8nlock add-lock-to-workflow --workflow-key ord`.
SHELL_SESSIONS = {
    "bash": """
eval "$(_N8NLOCK_COMPLETE=bash_source n8nlock)"
COMP_WORDS=(n8nlock add-lock-to-workflow --workflow-key ord); COMP_CWORD=3
_n8nlock_completion n8nlock
printf '%s\\n' "${COMPREPLY[@]}"
""",
    "zsh": """
autoload -Uz compinit && compinit -u
eval "$(_N8NLOCK_COMPLETE=zsh_source n8nlock)"
words=(n8nlock add-lock-to-workflow --workflow-key ord); CURRENT=4
compadd() { print -l -- ${(P)${@[-1]}}; }  # what zsh would offer, printed
_n8nlock_completion
""",
    "fish": """
_N8NLOCK_COMPLETE=fish_source n8nlock | source
complete -C 'n8nlock add-lock-to-workflow --workflow-key ord'
""",
}


@pytest.mark.parametrize("shell", sorted(SHELL_SESSIONS))
def test_tab_in_the_real_shell_offers_the_workflow_keys(keyed: Path, shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} is not installed (apt-get install {shell})")
    env = {**os.environ, "PATH": f"{N8NLOCK.parent}{os.pathsep}{os.environ['PATH']}"}
    env["HOME"] = str(keyed.parent)  # no user rc file, no completion cache of the user's
    run = subprocess.run(
        [shell, "-c", SHELL_SESSIONS[shell]],
        cwd=keyed,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    offered = [line.split("\t")[0] for line in run.stdout.splitlines() if line.strip()]
    assert sorted(offered) == ["order_sync", "orders"], run.stdout + run.stderr  # fish sorts
