"""What a run trains on: data sources by name, checked before TensorFlow loads, cut into parts.

- `request.py`: what data was asked for (`DataRequest`, `--split`), no TensorFlow;
- `signature.py`: what a model eats and returns, by name (the key by which data reaches it);
- `source.py`: the `DataSource` protocol every reader implements, and `FORMATS`, the table of
  data formats (suffix, early check, reader): the one place a new format is added;
- `data_check.py` and `npz_members.py`: the checks of a file's headers before TensorFlow or NumPy
  read it, and before a run folder is made;
- the readers: `arrays.py` (`.npz`, arrays from the library, parsed CSV), `csv_table.py`,
  `images.py` (class folders), `tfrecords.py`, over `pipeline.py`'s shared tf.data pieces;
- `plan.py`: the sources opened and split into train / validation / test parts.
"""
