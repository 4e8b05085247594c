"""Runs side by side and in the tracking servers people use (issue 33).

    netdsl runs runs/                       # one line per run and sweep, newest first
    netdsl runs compare runs/mlp-1 runs/mlp-2 --out compare.svg
    netdsl runs push runs/ --to mlflow:sqlite:///mlflow.db

`found.py` finds and reads run folders and sweep folders under a folder (through the
run-folder readers: only this user's own folders, bounded files), `listing.py` prints
them, `compare.py` sets runs side by side, `pushed.py` turns a folder into what a tracking
server records (parameters, every metric of every epoch, artifacts, keyed by the folder's
identity; `drawing.py` draws a run's diagram from its spec when the files go) and `push.py`
sends it to a target: `mlflow_target.py` (MLflow's client,
imported only there) or `tensorboard_target.py` (event files, TensorBoard's protos). No
backend is imported: listing and comparing read files only.
"""
