"""TensorBoard as a target (`tensorboard:DIR`): one event file per run, scalars and the HParams view.

    DIR/<run>/events.out.tfevents.0.netdsl-<identity>          a run
    DIR/<sweep>/trials/<k>/events.out.tfevents.0.netdsl-<id>   a sweep's trial

Each scalar is a float64 tensor (history.csv's value exactly; TensorBoard's `simple_value` would
keep a float32), step = epoch. The HParams view gets the run's parameters and, since it shows one
value per metric, each metric's value at the best epoch (`hparams/best_X`), at the last
(`hparams/final_X`) and its lowest (`hparams/min_X`): tensorboard#3755 shows only the last.
The file is written whole and atomically on every push, named by the run's identity: pushing
twice leaves the same one file. Written with TensorBoard's protos and record writer (no TensorFlow).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from netdsl.atomic import write_bytes
from netdsl.errors import UsageError
from netdsl.tracking.pushed import PushCount, Pushed
from netdsl.training.errors import RunError


def _modules() -> Any:
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
        from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError:
        raise UsageError(
            "pushing to TensorBoard needs it: install it with `pip install 'netdsl[tensorboard]'`"
        ) from None
    return (
        event_pb2,
        summary_pb2,
        tensor_pb2,
        tensor_shape_pb2,
        types_pb2,
        api_pb2,
        metadata,
        plugin_data_pb2,
        RecordWriter,
    )


class TensorBoardTarget:
    def __init__(self, folder: Path):
        self.folder = folder
        self.protos = _modules()
        self.live, self.artifacts = False, True  # (the event file is written whole each time: nothing to keep)

    def push(self, item: Pushed, where: Path | None = None) -> PushCount:
        count = PushCount()
        folder = (where or self.folder) / item.name.replace("trial ", "")
        if item.kind == "sweep":
            folder = self.folder / item.name
        target = folder / f"events.out.tfevents.0.netdsl-{item.identity}"
        data = self._events(item)
        try:
            old = target.read_bytes() if target.is_file() and not target.is_symlink() else None
            if old != data:
                write_bytes(target, data, links="refuse")
                count.metric_values += sum(len(points) for points in item.metrics.values()) if old is None else 0
        except OSError as exc:
            raise RunError(f"cannot write the event file: {exc.strerror or exc}", file=str(target)) from None
        if old is None:
            count.created += 1
        elif old != data:
            count.updated += 1
        else:
            count.unchanged += 1
        for child in item.children:
            count.add(self.push(child, folder / "trials"))
        return count

    def _events(self, item: Pushed) -> bytes:
        (
            event_pb2,
            summary_pb2,
            tensor_pb2,
            tensor_shape_pb2,
            types_pb2,
            api_pb2,
            metadata,
            plugin_data_pb2,
            record_writer,
        ) = self.protos
        wall = item.start_ms / 1000
        out = io.BytesIO()
        writer = record_writer(out)

        def write(event: Any) -> None:
            writer.write(event.SerializeToString(deterministic=True))

        write(event_pb2.Event(wall_time=wall, file_version="brain.Event:2"))
        scalars = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))

        def scalar(tag: str, value: float) -> Any:
            tensor = tensor_pb2.TensorProto(
                dtype=types_pb2.DT_DOUBLE, double_val=[value], tensor_shape=tensor_shape_pb2.TensorShapeProto()
            )
            return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=scalars)

        start = plugin_data_pb2.HParamsPluginData(
            session_start_info=plugin_data_pb2.SessionStartInfo(
                hparams={key: _value(api_pb2, value) for key, value in item.hparams.items()},
                start_time_secs=wall,
                group_name=item.name,
            )
        )
        write(
            event_pb2.Event(
                wall_time=wall,
                step=0,
                summary=summary_pb2.Summary(
                    value=[
                        summary_pb2.Summary.Value(
                            tag=metadata.SESSION_START_INFO_TAG, metadata=metadata.create_summary_metadata(start)
                        )
                    ]
                ),
            )
        )
        epochs = sorted({epoch for points in item.metrics.values() for epoch, _ in points})
        by_epoch: dict[int, list[Any]] = {epoch: [] for epoch in epochs}
        for name, points in item.metrics.items():
            for epoch, value in points:
                by_epoch[epoch].append(scalar(name, value))
        for epoch in epochs:
            write(
                event_pb2.Event(wall_time=wall + epoch, step=epoch, summary=summary_pb2.Summary(value=by_epoch[epoch]))
            )
        last = epochs[-1] if epochs else 0
        if item.summary:
            write(
                event_pb2.Event(
                    wall_time=wall + last,
                    step=last,
                    summary=summary_pb2.Summary(
                        value=[scalar(f"hparams/{name}", value) for name, value in sorted(item.summary.items())]
                    ),
                )
            )
        if item.status not in ("running",):
            status = api_pb2.STATUS_SUCCESS if item.status != "failed" else api_pb2.STATUS_FAILURE
            end = plugin_data_pb2.HParamsPluginData(
                session_end_info=plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=wall + last)
            )
            write(
                event_pb2.Event(
                    wall_time=wall + last,
                    step=last,
                    summary=summary_pb2.Summary(
                        value=[
                            summary_pb2.Summary.Value(
                                tag=metadata.SESSION_END_INFO_TAG, metadata=metadata.create_summary_metadata(end)
                            )
                        ]
                    ),
                )
            )
        writer.flush()
        return out.getvalue()


def _value(api_pb2: Any, value: Any) -> Any:
    from google.protobuf import struct_pb2

    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value)
    if isinstance(value, (int, float)):
        return struct_pb2.Value(number_value=float(value))
    return struct_pb2.Value(string_value=str(value))


__all__ = ["TensorBoardTarget"]
