"""A sweep deletes only what it can prove it made, and trusts a sweep folder as a run folder is trusted
(security review 2026-12b, N1 and N6).

Each way the review found to make `netdsl sweep` delete a folder of the user's is planted here: another
account's sweep folder adopted by `--resume auto`, a received folder of the user's own given to
`--resume DIR`, and one RUNNING trial added to a shared study that a plain new sweep repairs. In every
case the victim folder is intact afterwards. The sweep's trials are tiny (one epoch, one trial).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import netdsl
from netdsl.cli import main
from netdsl.tuning.folder import SweepFolder

optuna = pytest.importorskip("optuna", reason="netdsl[sweep] (Optuna) is not installed")

OTHER_UID = 12345  # an account that is not this user (the tests run as any user; chown needs root)

SPEC = """\
let width = 4

model mlp {
  input x: (6,)
  output y = x -> dense(width, activation=relu) -> dense(3)
  train {
    optimizer = adam
    loss = sparse_categorical_crossentropy(from_logits=true)
    batch_size = 32
    epochs = 1
    shuffle = false
  }
}

sweep mlp {
  width = choice(4, 8)
  objective = minimize(loss)
  trials = 1
}
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "mlp.net").write_text(SPEC)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6)).astype("float32")
    np.savez(tmp_path / "good.npz", x=x, y=(x[:, 0] > 0).astype("int64"))
    victim = tmp_path / "victim_data"
    (victim / "sub").mkdir(parents=True)
    (victim / "thesis.txt").write_text("three years of notes")
    (victim / "sub" / "results.csv").write_text("x\n")
    return tmp_path


def victim_intact(project: Path) -> bool:
    victim = project / "victim_data"
    return (victim / "thesis.txt").read_text() == "three years of notes" and (victim / "sub" / "results.csv").is_file()


def plant_study(storage: str, study: str, run: Path, sweep: Path | None = None) -> None:
    """One trial asked for and never told (so it stays RUNNING), whose `run` names the victim."""
    planted = optuna.create_study(study_name=study, storage=storage, load_if_exists=True)
    trial = planted.ask({"width": optuna.distributions.CategoricalDistribution([4, 8])})
    trial.set_user_attr("run", str(run))
    if sweep is not None:
        trial.set_user_attr("sweep", str(sweep))


def plant_sweep_folder(out: Path, victim: Path) -> Path:
    folder = out / "mlp-sweep-7"
    folder.mkdir(parents=True)
    (folder / "sweep.json").write_text(
        json.dumps(
            {
                "spec": {"model": "mlp"},
                "objective": {"direction": "minimize", "metric": "loss"},
                "status": "running",
                "storage": "study.db",
                "study": "mlp-sweep",
                "trials": 1,
                "seed": 1,
            }
        )
    )
    plant_study(f"sqlite:///{folder / 'study.db'}", "mlp-sweep", victim)
    return folder


def chown_tree(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, -1, follow_symlinks=False)
    os.chown(path, uid, -1)


needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="planting another account's folder needs root (chown)"
)


@needs_root
def test_resume_auto_passes_over_another_accounts_sweep_folder(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    planted = plant_sweep_folder(project / "shared", project / "victim_data")
    chown_tree(planted, OTHER_UID)
    os.chmod(project / "shared", 0o1777)
    code = main(["sweep", "mlp.net", "--data", "good.npz", "-o", "shared", "--resume", "auto", "--seed", "1"])
    assert code == 0, capsys.readouterr().err
    assert victim_intact(project)
    assert (project / "shared" / "mlp-sweep-8" / "trials" / "0" / "config.json").is_file()  # a new sweep
    assert json.loads((planted / "sweep.json").read_text())["status"] == "running"  # not touched


@needs_root
def test_resume_dir_and_show_refuse_another_accounts_sweep_folder(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    planted = plant_sweep_folder(project / "shared", project / "victim_data")
    chown_tree(planted, OTHER_UID)
    assert main(["sweep", "mlp.net", "--data", "good.npz", "--resume", str(planted)]) == 1
    assert capsys.readouterr().err == (
        f"{planted}: error: this sweep folder belongs to another account (uid {OTHER_UID}); "
        "netdsl resumes, joins and shows only sweep folders you made\n"
    )
    assert main(["sweep", "--show", str(planted)]) == 1
    assert "belongs to another account" in capsys.readouterr().err
    assert victim_intact(project)


def test_a_received_folder_of_the_users_own_clears_only_its_own_trial_folder(project, monkeypatch, capsys):
    """The folder is the user's (copied from elsewhere), its study names the victim: the trial is
    taken up in trials/0 of this folder, as netdsl's rule says; the victim is never looked at."""
    monkeypatch.chdir(project)
    planted = plant_sweep_folder(project / "received", project / "victim_data")
    code = main(["sweep", "mlp.net", "--data", "good.npz", "--resume", str(planted)])
    assert code == 0, capsys.readouterr().err
    assert victim_intact(project)
    assert (planted / "trials" / "0" / "config.json").is_file()
    assert json.loads((planted / "sweep.json").read_text())["status"] == "finished"


def test_a_trial_added_to_a_shared_study_cannot_make_a_new_sweep_delete(project, monkeypatch, capsys):
    """Whoever can write the team's study adds one RUNNING trial naming the path this sweep will get
    (the review's N1 b): a plain `netdsl sweep` with no --resume repairs it in its own trials/0."""
    monkeypatch.chdir(project)
    storage = f"sqlite:///{project / 'team.db'}"
    mine = (project / "sweeps" / "mlp-sweep-1").resolve()
    plant_study(storage, "team-study", project / "victim_data", sweep=mine)
    code = main(
        [
            "sweep",
            "mlp.net",
            "--data",
            "good.npz",
            "--storage",
            storage,
            "--study",
            "team-study",
            "-o",
            "sweeps",
            "--trials",
            "2",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert victim_intact(project)
    assert sorted(p.name for p in (mine / "trials").iterdir()) == ["0", "1"]


def test_a_trial_folder_holding_files_a_run_does_not_write_first_is_left_and_said(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    planted = plant_sweep_folder(project / "received", project / "victim_data")
    trial = planted / "trials" / "0"
    trial.mkdir(parents=True)
    (trial / ".lock").write_text("")
    (trial / "notes.txt").write_text("mine")
    code = main(["sweep", "mlp.net", "--data", "good.npz", "--resume", str(planted)])
    out = capsys.readouterr().out
    assert code == 0
    assert (trial / "notes.txt").read_text() == "mine" and (trial / ".lock").is_file()
    assert (
        f"trial 0: width=4 -> its run folder {trial} holds files netdsl did not write before a run "
        "starts; netdsl left it as it is (failed)"
    ) in out.replace("width=8", "width=4")


def test_a_linked_trials_folder_is_refused(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    planted = plant_sweep_folder(project / "received", project / "victim_data")
    elsewhere = project / "elsewhere"
    (elsewhere / "0").mkdir(parents=True)
    (planted / "trials").symlink_to(elsewhere)
    assert main(["sweep", "mlp.net", "--data", "good.npz", "--resume", str(planted)]) == 1
    assert capsys.readouterr().err == (
        f"{planted}: error: trials: is a symbolic link, not a sweep's trials folder; "
        "netdsl writes trials only into a folder of its own\n"
    )
    assert (elsewhere / "0").is_dir()


@pytest.mark.parametrize("plant", ["link", "huge", "fifo", "list"])
def test_sweep_json_is_read_as_a_run_file(project, plant, capsys):
    folder = project / "received" / "mlp-sweep-1"
    folder.mkdir(parents=True)
    target = folder / "sweep.json"
    if plant == "link":
        (project / "real.json").write_text("{}")
        target.symlink_to(project / "real.json")
    elif plant == "huge":
        with open(target, "wb") as f:
            f.truncate(8 << 30)  # sparse: 8 GiB declared, nothing read
    elif plant == "fifo":
        os.mkfifo(target)
    else:
        target.write_text("[1, 2]")
    expected = {
        "link": "cannot read sweep.json: is a symbolic link, not a sweep file; netdsl does not read through links here",
        "huge": "cannot read sweep.json: file is too large (8,589,934,592 bytes); a sweep file may be at "
        "most 16,777,216 bytes",
        "fifo": "cannot read sweep.json: is a named pipe (FIFO), not a sweep file",
        "list": "cannot read sweep.json: not a JSON object",
    }[plant]
    with pytest.raises(netdsl.errors.NetdslError) as caught:
        SweepFolder(folder).read()
    assert str(caught.value) == f"{folder}: error: {expected}"


def test_clear_unstarted_removes_only_what_a_run_writes_before_its_config(project):
    folder = SweepFolder(project / "s")
    folder.path.mkdir()
    empty, locked, started, other = (folder.trial_dir(n) for n in range(4))
    empty.mkdir()
    locked.mkdir()
    (locked / ".lock").write_text("123")
    (locked / ".config.json.0123456789ab.tmp").write_text("{")
    started.mkdir()
    (started / ".lock").write_text("")
    (started / "config.json").write_text("{}")
    other.symlink_to(project / "victim_data")
    assert folder.clear_unstarted(empty) and not empty.exists()
    assert folder.clear_unstarted(locked) and not locked.exists()
    assert not folder.clear_unstarted(started) and (started / "config.json").is_file()
    assert not folder.clear_unstarted(other) and victim_intact(project)
    assert not folder.clear_unstarted(project / "victim_data") and victim_intact(project)  # not trials/<k>
    assert folder.clear_unstarted(folder.trial_dir(9))  # nothing there: nothing to do
