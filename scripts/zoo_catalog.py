"""Print the weight files keras.applications pins for the zoo's families, as the
table `netdsl/zoo/catalog.py` holds: development time only (it builds every model).

Each family's constructor is called with weights="imagenet" and Keras' `get_file`
replaced by a recorder, so the file names, URLs and hashes are the ones Keras itself
would fetch; nothing is downloaded.

    python scripts/zoo_catalog.py > table.txt
"""

from __future__ import annotations

import sys

import keras
from keras.src.utils import file_utils

CONSTRUCTORS = [
    "ResNet50",
    "ResNet101",
    "ResNet152",
    "ResNet50V2",
    "ResNet101V2",
    "ResNet152V2",
    "MobileNetV2",
    "MobileNetV3Small",
    "MobileNetV3Large",
    "EfficientNetB0",
    "EfficientNetB1",
    "EfficientNetB2",
    "EfficientNetB3",
    "EfficientNetV2B0",
    "EfficientNetV2B1",
    "EfficientNetV2B2",
    "EfficientNetV2B3",
    "DenseNet121",
    "Xception",
    "ConvNeXtTiny",
    "InceptionV3",
    "VGG16",
]


class Recorded(Exception):
    pass


def pinned(constructor: str, include_top: bool) -> tuple[str, str, str | None]:
    seen: list[tuple[str, str, str | None]] = []

    def record(fname, origin=None, *args, file_hash=None, **kwargs):
        seen.append((fname, origin, file_hash))
        raise Recorded

    original = file_utils.get_file
    file_utils.get_file = record
    try:
        keras.backend.clear_session()
        getattr(keras.applications, constructor)(weights="imagenet", include_top=include_top)
    except Recorded:
        pass
    finally:
        file_utils.get_file = original
    (found,) = seen
    return found


if __name__ == "__main__":
    for constructor in sys.argv[1:] or CONSTRUCTORS:
        for top in (True, False):
            print(constructor, top, *pinned(constructor, top), sep="\t", flush=True)
