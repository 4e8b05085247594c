"""The zoo's table of published weights is keras.applications' own: each family's constructor called
with weights="imagenet" and Keras' `get_file` replaced by a recorder gives the same file name, URL
and hash the catalog holds (nothing is downloaded)."""

from __future__ import annotations

import keras
import pytest
from keras.src.utils import file_utils

from netdsl.zoo.catalog import FAMILIES, PREPROCESS


class _Recorded(Exception):
    pass


def pinned_by_keras(constructor: str, include_top: bool) -> tuple[str, str, str | None]:
    seen = []

    def record(fname, origin=None, *args, file_hash=None, **kwargs):
        seen.append((fname, origin, file_hash))
        raise _Recorded

    original = file_utils.get_file
    file_utils.get_file = record
    try:
        keras.backend.clear_session(free_memory=False)
        getattr(keras.applications, constructor)(weights="imagenet", include_top=include_top)
    except _Recorded:
        pass
    finally:
        file_utils.get_file = original
    (found,) = seen
    return found


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_catalog_pins_what_keras_applications_pins(family):
    for include_top in (True, False):
        published = family.weights(include_top)
        assert (published.fname, published.origin, published.file_hash) == pinned_by_keras(
            family.constructor, include_top
        )


def test_every_family_names_a_known_preprocessing_and_a_unique_name():
    assert all(family.preprocess in PREPROCESS for family in FAMILIES)
    assert len({family.name for family in FAMILIES}) == len(FAMILIES)
    assert all(family.name == family.name.lower() and family.name.isidentifier() for family in FAMILIES)
