"""Preprocessing and augmentation layers: Keras computes their shapes and state from data (adapt(),
vocabularies, resize targets), so netdsl leaves all three rules to Keras; `check` shows them as unknown."""

from __future__ import annotations

from netdsl.registry.layers.anatomy import Anatomy

_AUGMENTATION = """
    aug_mix auto_contrast cut_mix equalization max_num_bounding_boxes mix_up rand_augment random_brightness
    random_color_degeneration random_color_jitter random_contrast random_crop random_elastic_transform
    random_erasing random_flip random_gaussian_blur random_grayscale random_hue random_invert random_perspective
    random_posterization random_rotation random_saturation random_sharpness random_shear random_translation
    random_zoom solarization contrast_limited_adaptive_histogram_equalization
""".split()
_FEATURES = """
    category_encoding center_crop discretization hashed_crossing hashing integer_lookup mel_spectrogram resizing
    string_lookup text_vectorization
""".split()

LAYERS: dict[str, Anatomy] = {name: Anatomy(None, None) for name in _AUGMENTATION + _FEATURES}  # one output each

UNKNOWN: dict[str, str] = {
    **{name: "image augmentation: its outputs (and bounding boxes) are left to Keras" for name in _AUGMENTATION},
    **{name: "feature preprocessing: shapes and state follow the data it adapts to" for name in _FEATURES},
}
