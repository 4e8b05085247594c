"""MLflow as a target (`mlflow:<tracking URI>`), through MLflow's own client (`netdsl[mlflow]`).

One experiment (`--experiment`, default `netdsl`) holds the pushed runs. Each tracked run carries
the tag `netdsl.identity` (`pushed.py`), found again on every push; `netdsl.epochs` is the last
epoch whose metrics it holds and `netdsl.artifacts` the fingerprint of the files it was given, so
a push sends only what is new. A sweep is a parent run whose trials are its children
(`mlflow.parentRunId`). Parameters are written once (MLflow's parameters never change); metrics
go as MLflow keeps them (float64: history.csv's values exactly), step = epoch.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from netdsl.errors import UsageError
from netdsl.tracking.pushed import STATUSES, PushCount, Pushed, fingerprint, shown_uri, staged
from netdsl.training.errors import RunError

IDENTITY, EPOCHS, ARTIFACTS = "netdsl.identity", "netdsl.epochs", "netdsl.artifacts"
_METRICS = 800  # metric values per log_batch call (MLflow takes 1000 values a call: room for 100 parameters, tags)
_PARAM_CHARS = 6000  # the longest parameter value MLflow 3 keeps


def _client(uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UsageError("pushing to MLflow needs MLflow: install it with `pip install 'netdsl[mlflow]'`") from None
    # MLflow prints a "View run ... at URL" line per run it ends: netdsl prints one summary line itself
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    for name in ("mlflow", "alembic", "urllib3"):  # a database created or upgraded is not news to print
        logging.getLogger(name).setLevel(logging.WARNING)
    return MlflowClient(tracking_uri=uri)


class MlflowTarget:
    def __init__(self, uri: str, experiment: str):
        self.uri, self.shown = uri, shown_uri(f"mlflow:{uri}")
        self.client = _client(uri)
        self.experiment_id = self._guarded(lambda: self._experiment(experiment))
        self.known: dict[str, Any] = self._guarded(self._runs)
        self.live = False  # pushed again and again while it trains: keep what the server holds now
        self.artifacts = True  # send the files (a live run sends them once, when it ends; a trial once it ended)

    def _guarded(self, call: Any) -> Any:
        """MLflow's call, its failure one line naming the target (a server down, a database refused)."""
        from mlflow.exceptions import MlflowException

        try:
            return call()
        except MlflowException as exc:
            if isinstance(exc.__context__, OSError):  # MLflow's words around requests' ConnectionError, Timeout
                raise RunError(f"cannot reach MLflow: {_reason(exc.__context__)}", file=self.shown) from None
            raise RunError(f"MLflow refused: {_first_line(exc.message)}", file=self.shown) from None
        except (OSError, ValueError) as exc:  # requests' errors are OSErrors: the server is down, or no server
            raise RunError(f"cannot reach MLflow: {_reason(exc)}", file=self.shown) from None

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        location = None
        if self.uri.startswith("sqlite:///"):  # beside the database, not in the current folder
            location = (Path(self.uri[len("sqlite:///") :]).resolve().parent / "mlartifacts").as_uri()
        return str(self.client.create_experiment(name, artifact_location=location))

    def _runs(self) -> dict[str, Any]:
        """The experiment's runs by their netdsl identity."""
        known: dict[str, Any] = {}
        token = None
        while True:
            page = self.client.search_runs([self.experiment_id], max_results=1000, page_token=token)
            for run in page:
                identity = run.data.tags.get(IDENTITY)
                if identity:
                    known[identity] = run
            token = page.token
            if not token:
                return known

    def push(self, item: Pushed, parent: str | None = None) -> PushCount:
        return self._guarded(lambda: self._push(item, parent))

    def _push(self, item: Pushed, parent: str | None) -> PushCount:
        from mlflow.entities import Metric, Param, RunTag

        count = PushCount()
        existing = self.known.get(item.identity)
        tags = {
            IDENTITY: item.identity,
            "netdsl.folder": str(item.folder),
            "netdsl.status": item.status,
            "netdsl.kind": item.kind,
        }
        if parent is not None:
            tags["mlflow.parentRunId"] = parent
        if existing is None:
            run = self.client.create_run(
                self.experiment_id, start_time=item.start_ms or None, run_name=item.name, tags=tags
            )
            run_id, params, epochs, artifacts, old_tags = run.info.run_id, {}, 0, "", {}
            count.created += 1
        else:
            run_id, params = existing.info.run_id, existing.data.params
            old_tags = existing.data.tags
            epochs = int(old_tags.get(EPOCHS, "0") or 0)
            artifacts = old_tags.get(ARTIFACTS, "")
        new_params = [Param(k, v[:_PARAM_CHARS]) for k, v in item.params.items() if k not in params]
        values = [
            Metric(name, value, item.start_ms + epoch, epoch)
            for name, points in item.metrics.items()
            for epoch, value in points
            if epoch > epochs
        ]
        new_tags = [RunTag(k, v) for k, v in tags.items() if old_tags.get(k) != v and existing is not None]
        changed = bool(values or new_params or new_tags)
        done: list[Any] = []  # what the server holds once the batches are in: set with the last of them
        if item.last_epoch > epochs:
            done.append(RunTag(EPOCHS, str(item.last_epoch)))
        mark = fingerprint(item)
        # a live sweep's trial that has ended sends its files then, not when the whole sweep ends
        ended = parent is not None and item.kind == "run" and item.status != "running"
        if (self.artifacts or ended) and mark != artifacts:  # first: a batch that fails leaves the mark unset
            with staged(item, count.warnings) as stage:
                self.client.log_artifacts(run_id, str(stage))
                count.artifacts += sum(len(files) for _, _, files in os.walk(stage))
            done.append(RunTag(ARTIFACTS, mark))
            changed = True
        # as few calls as MLflow allows (each one a database transaction): its limits per call are 1000
        # values in all, of which at most 100 parameters and 100 tags
        batches = max(-(-len(values) // _METRICS), -(-len(new_params) // 100), 1)
        for k in range(batches):
            batch_tags = (new_tags if k == 0 else []) + (done if k == batches - 1 else [])
            batch_values, batch_params = values[k * _METRICS : (k + 1) * _METRICS], new_params[k * 100 : (k + 1) * 100]
            if batch_values or batch_params or batch_tags:
                self.client.log_batch(run_id, metrics=batch_values, params=batch_params, tags=batch_tags)
        count.metric_values += len(values)
        status = STATUSES.get(item.status, "RUNNING")
        current = existing.info.status if existing is not None else "RUNNING"
        if status != current:
            if status == "RUNNING":
                self.client.update_run(run_id, status="RUNNING")
            else:
                self.client.set_terminated(run_id, status=status)
            changed = True
        if self.live and (changed or existing is None):  # the next push of a live run finds it as it is now
            self.known[item.identity] = self.client.get_run(run_id)
        if existing is not None:
            count.updated += int(changed)
            count.unchanged += int(not changed)
        for child in item.children:
            count.add(self._push(child, run_id))
        return count


def _first_line(text: str) -> str:
    lines = [line for line in str(text).strip().splitlines() if line.strip()]
    return lines[0][:300] if lines else "no reason given"


def _reason(exc: BaseException) -> str:
    """Why a connection failed ('[Errno 111] Connection refused'), without requests' and urllib3's wrapping."""
    found = re.search(r"\[Errno -?\d+\] [^'\")]+", str(exc))
    return found.group(0) if found else _first_line(str(exc))
