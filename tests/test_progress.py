"""The one progress bar (attnxai.progress) and the commands' shared flags: in a log a bar writes
a line every few seconds at most, a training's batch bar none; every command that shows
progress takes --no-progress."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from attnxai import progress
from attnxai.cli import COMMANDS


class _Log(io.StringIO):
    def isatty(self):
        return False


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_bar_in_a_log_writes_at_most_every_few_seconds(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Log())
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert not progress.interactive()
    bar = progress.bar(range(3), total=3)
    assert bar.mininterval == progress.LOG_SECONDS and not bar.disable
    assert list(bar) == [0, 1, 2]
    quiet = progress.bar(range(3), per_step=False)
    assert quiet.disable and list(quiet) == [0, 1, 2]      # iterates, shows nothing
    assert progress.bar(range(2), mininterval=60).mininterval == 60
    assert progress.bar(range(2), disable=True).disable


def test_a_bar_in_a_terminal_updates_as_tqdm_does(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress.interactive()
    bar = progress.bar(range(3), per_step=False)
    assert not bar.disable and bar.mininterval < progress.LOG_SECONDS
    bar.close()


def test_a_training_log_holds_its_epochs_not_its_batches(capsys, monkeypatch):
    log = _Log()
    monkeypatch.setattr(sys, "stderr", log)
    assert sum(1 for _ in progress.bar(range(1000), per_step=False, desc="epoch 1/1")) == 1000
    progress.write("epoch 1: train loss 0.5")
    assert log.getvalue() == "" and "epoch 1: train loss" in capsys.readouterr().out
    shown = progress.bar(range(1000), desc="study", file=log)          # a study's bar: a line
    for _ in shown:                                                    # at start and at the end
        pass
    shown.close()
    assert 1 <= log.getvalue().count("study") <= 3


@pytest.mark.parametrize("command", ["train", "explain", "lime-experiment", "faithfulness",
                                     "shapley-experiment", "multilayer-lime",
                                     "multilayer-screens", "skip-ablation"])
def test_every_command_that_shows_progress_takes_no_progress(command):
    import argparse

    p = argparse.ArgumentParser()
    COMMANDS[command][0](p)
    assert "--no-progress" in p._option_string_actions


def test_train_no_progress_is_accepted(quick_model):
    """Before: 'unrecognized arguments: --no-progress'."""
    out = subprocess.run([sys.executable, "-m", "attnxai", "train", "--profile", "quick",
                          "--no-progress"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "test accuracy" in out.stdout and out.stderr == ""
