"""One run: settings resolved, the engine training, the run folder kept, a trained model used.

- `settings.py`: from flags or library arguments to the `TrainConfig` a run trains with (no TensorFlow);
- `engine.py`: a `TrainConfig` in, a finished (or stopped) `Run` out; `inference.py`: evaluate, predict;
- the run folder: `runs.py` (where), `report.py` (what is written), `record.py` (`Run`, read back),
  `keeper.py` (the callback that writes after each epoch), `checkpoint.py` (the resumable state),
  `curves.py`, `progress.py`;
- `signals.py` (Ctrl-C and SIGTERM stop a run cleanly), `epoch_hook.py` (a listener per epoch).
"""
