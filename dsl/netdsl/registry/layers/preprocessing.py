"""Preprocessing and augmentation layers. An image augmentation gives pictures of the size it takes
(`random_flip`, `random_rotation`, ... `rand_augment`), a crop or a resize pictures of the size it is
given (`random_crop`, `center_crop`, `resizing`), none of them with weights. The other preprocessing
layers compute their shapes and state from data (adapt(), vocabularies): `check` shows them as unknown."""

from __future__ import annotations

from netdsl.registry.layers.anatomy import Anatomy, Args, Shape, channels_last, no_weights

_AUGMENTATION = """
    aug_mix auto_contrast cut_mix equalization max_num_bounding_boxes mix_up rand_augment random_brightness
    random_color_degeneration random_color_jitter random_contrast random_elastic_transform
    random_erasing random_flip random_gaussian_blur random_grayscale random_hue random_invert random_perspective
    random_posterization random_rotation random_saturation random_sharpness random_shear random_translation
    random_zoom solarization contrast_limited_adaptive_histogram_equalization
""".split()
_SIZED = ["random_crop", "center_crop", "resizing"]
# Keras' image preprocessing layers: their call defaults to `training=True`, which a functional model records.
IMAGE_PREPROCESSING = frozenset(_AUGMENTATION + _SIZED)
_FEATURES = """
    category_encoding discretization hashed_crossing hashing integer_lookup mel_spectrogram
    string_lookup text_vectorization
""".split()


def _pictures(args: Args, shapes: list[Shape]) -> Shape:
    """Pictures in, pictures of the same size out (height, width, channels)."""
    if len(shapes[0]) != 3:
        raise ValueError("not a picture: left to Keras")
    return shapes[0]


def _sized(args: Args, shapes: list[Shape]) -> Shape:
    """Pictures of `height` x `width` out, channels as they came."""
    if len(shapes[0]) != 3 or not channels_last(args):
        raise ValueError("not a channels_last picture: left to Keras")
    return (args["height"], args["width"], shapes[0][-1])


LAYERS: dict[str, Anatomy] = {
    **{name: Anatomy(_pictures, no_weights) for name in _AUGMENTATION},
    **{name: Anatomy(_sized, no_weights) for name in _SIZED},
    **{name: Anatomy(None, None) for name in _FEATURES},  # one output each
}

UNKNOWN: dict[str, str] = {
    name: "feature preprocessing: shapes and state follow the data it adapts to" for name in _FEATURES
}
