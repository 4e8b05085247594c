"""Every bound netdsl puts on a spec, in one place, each with its reason.

A spec is data that anyone may hand to `check`, `build` or `render`; these
limits make sure that whatever it holds, netdsl ends quickly (about 2 s and
1 GB for a 64 KB file) with a diagnostic instead of hanging, swapping or
crashing. Each limit is checked *before* the work it guards is done. The
language guide's limits section (docs/language.md) lists them for users;
change both together (and say so in CHANGELOG.md).
"""

from __future__ import annotations

# ------------------------------------------------------------------ reading

# Bytes of one spec file. A spec is a few KB; 2 MiB leaves room for generated
# and exported specs while keeping the parse well under 10 s.
MAX_FILE_BYTES = 2 * 1024 * 1024

# Files one program may import (transitively). Each is read and parsed once.
MAX_IMPORTED_FILES = 256

# Imports that import imports...: the loader follows them recursively.
MAX_IMPORT_DEPTH = 32

# ------------------------------------------------------------------ syntax

# Open brackets ( [ { at once: the parser and every tree walker recurse this deep.
MAX_NESTING = 64

# Digits of one number literal: Python's int() of a huge literal is quadratic.
MAX_NUMBER_DIGITS = 40

# Operators, calls and brackets nested in one expression of the source, refused
# while parsing with their position: the checker, the formatter and the Keras
# expression layers walk expressions recursively. 0.1.0 stopped near 490 levels,
# where its recursive tree transform ran out of Python's stack; 200 is far deeper
# than a person writes (`a + b + c` is 2 levels) and leaves the walkers room
# inside 48 nested blocks.
MAX_EXPRESSION_DEPTH = 200
# The checker holds the same bound where an expression is evaluated (through the
# `let` functions and constants it names) and where a declared activation is
# inlined into another: the worst case inside 48 nested blocks needs about 800
# of Python's 1,000 frames.

# Syntax errors reported for one file (each top-level declaration is re-parsed).
MAX_SYNTAX_ERRORS = 20

# Diagnostics one check reports; then one more says how many were left out. A
# 2 MiB file of one line repeated gave 41,853 (7.9 MB of text to print).
MAX_DIAGNOSTICS = 1000

# ------------------------------------------------------------------ constants

# The largest integer a constant may hold (Keras takes int64).
MAX_INT = 2**63

# Items of one string, list or tuple a constant expression makes.
MAX_SEQUENCE = 100_000

# Items of one constant value counted in full: nested lists and every
# reference to a shared list included (`let b = [a] * 1000` holds 1000 copies
# of `a`). Checking, describing and building walk values whole.
MAX_VALUE_ITEMS = 1_000_000

# Lists, tuples and dicts nested in one constant value (through `let`s as well).
MAX_VALUE_DEPTH = 64

# `let` functions calling each other, and file-level `let`s defined through a
# `let` declared further down: both are evaluated by recursion.
MAX_CALL_DEPTH = 64

# Work of the constant folder in one check: every operator evaluated, every
# item of a list or tuple made, every item of a value given to a step as an
# argument, every item two values compare or `min`/`max` read, a 64th of each
# character of text copied or read. Functions that call each other twice per
# level, or large constants passed to many layers, multiply work without making
# the file longer. A step of it takes about 1 us, and a check may also spend all
# of MAX_EXPANSION_STEPS (about 0.7 s): 1,000,000 let a 1 KB file of both take
# 2.1-2.8 s on a loaded machine (issue 22's fuzz campaign), 500,000 about 1.1 s.
MAX_CONST_WORK = 500_000

# A large file pays for what it writes out: its budget of constant work is at
# least this much per byte of its text (a 2 MiB list literal is folded whole).
CONST_WORK_PER_BYTE = 2

# ------------------------------------------------------------------ expansion

# `STEP * N`: the count of one repeat.
MAX_REPEAT = 10_000

# Tensors one `split` or `unstack` gives: each is a graph output of its node, so
# `unstack(x, axis=1)` of a 100,000-long axis would make 100,000 of them.
MAX_SPLIT_OUTPUTS = 1_024

# Blocks (and nested models) inside blocks: each level is a recursion.
MAX_BLOCK_DEPTH = 48

# Layers of one model after every block and repeat is expanded. A path whose
# input already failed to check still counts the layers it would make.
MAX_LAYERS = 50_000

# Expansion steps of one check: every statement run, every block instance and
# every layer made (or skipped after an error), in every model and in every
# block checked on its own (there each repeat runs once). Bounds the time of a
# check whatever a file repeats or nests (a layer takes 10-30 us); one model of
# MAX_LAYERS layers written as repeats of layers fits.
MAX_EXPANSION_STEPS = 60_000

# ...and its budget of expansion steps at least one per this many bytes of its
# text (a flat statement `h2 = h1 -> dense(16)` is about 25 bytes and 2 steps).
BYTES_PER_EXPANSION_STEP = 8

# What a statement that fails costs of MAX_EXPANSION_STEPS besides its own
# step: making a diagnostic takes about ten times as long as a statement.
FAILED_STATEMENT_STEPS = 10

# A dimension of a model input (Keras and TensorFlow index with int32).
MAX_DIM = 2**31 - 1

# Parameters of one layer, estimated before any Keras constructor runs
# (`--max-params` raises it): a typo such as `dense(100000000)` must not
# allocate gigabytes.
MAX_PARAMS = 1_000_000_000

# Declared activations inlined into one another.
MAX_INLINE_DEPTH = 16

# Nesting of an expression tree read back from a saved model (custom/expr.py):
# a `.keras` file is data too.
MAX_SAVED_EXPR_DEPTH = 200

# ------------------------------------------------------------------ messages

# Characters of a constant shown in a diagnostic before it is cut with "...".
MAX_SHOWN_VALUE = 200

# ------------------------------------------------------------------ diagnostics

# Names compared by "did you mean" in one check: each suggestion compares a name
# with every candidate, so thousands of misspelt names among thousands of names
# would check in quadratic time; past this budget no more suggestions are made.
MAX_SUGGESTION_WORK = 100_000

# ------------------------------------------------------------------ decompile (.keras -> .net)

# Functional models nested in models in one .keras file (read recursively).
MAX_NESTED_MODELS = 16

# Outputs of one layer call that a tensor in a .keras file may name (keras_history's last index):
# a layer's several outputs or a nested model's; the graph holds one entry per output up to the
# highest index named, so a corrupt index (2**63, found by the .keras fuzz campaign) must not.
MAX_CALL_OUTPUTS = 1_024

# Layers one single-entry, single-exit region may hold when the decompiler folds it.
MAX_REGION_OPS = 20_000

# Units one repeated motif may span when the decompiler looks for blocks: the
# search is quadratic in it.
MAX_MOTIF_UNITS = 40

# Bytes of the config.json inside a .keras file (ResNet152's is about 0.5 MB).
MAX_CONFIG_BYTES = 64 * 1024 * 1024

# Blocks one decompile may define, and motifs it evaluates exactly per round
# (best bound first): the block search stays within a second on ResNet152.
MAX_BLOCKS = 64
MAX_CANDIDATES = 96

# ------------------------------------------------------------------ sweeps

# Trials of one sweep (`trials = N`, `--trials N`): each trains a model and keeps a run
# folder; a study of more is a mistake, and the summary and plots stay readable. A grid
# (`sampler = grid`) of more points is refused at `check`: its size is counted, since
# Optuna's grid sampler lists every point in memory.
MAX_SWEEP_TRIALS = 10_000

# Values of one `choice(...)`: Optuna stores every choice in each trial's distribution.
MAX_SWEEP_CHOICES = 1_000

# Objectives of one sweep (`objectives = [...]`): the Pareto plot draws every pair of them
# (28 panels at 8); a front over more dimensions holds nearly every trial and says little.
MAX_SWEEP_OBJECTIVES = 8

# Processes of one `netdsl sweep --workers K` on one machine: each loads TensorFlow (about
# 500 MB); more than this is a typo for --trials.
MAX_SWEEP_WORKERS = 64
# ------------------------------------------------------------------ data and run files (issue 22)

# One array of an .npz file, uncompressed: NumPy allocates it whole before
# reading, so a header declaring 2**40 rows must be refused before that.
MAX_NPZ_MEMBER_BYTES = 64 * 1024**3
# A deflated member of zeros expands about 1000x; real data rarely compresses
# past 200x. Above 64 MiB of output a member may expand at most this much.
MAX_NPZ_RATIO = 200
MAX_NPZ_PLAIN_EXPANSION = 64 * 1024**2

# A CSV file is read whole into memory and parsed there.
MAX_CSV_BYTES = 4 * 1024**3

# A .keras file's config.json above 1 MiB may expand at most 100x: JSON of real
# models compresses 10-40x, while 64 MiB of `[{},{},...]` fits in 65 KB and
# parses into 22 million objects (a zip bomb: 1.8 GB, 7.5 s).
MAX_CONFIG_RATIO = 100
MAX_CONFIG_PLAIN_EXPANSION = 1024**2

# One CSV cell (Python's csv module stops at 128 KiB; a cell of data is a number).
MAX_CSV_FIELD = 131_072

# One .txt file of a text folder (a sample: a review, an article). Every file of the folder is held in
# memory for the run; a novel-length sample (1 MiB, ~170,000 words) is far past what a text model reads.
MAX_TEXT_FILE_BYTES = 1024**2

# A text folder's files together: they are read whole into memory, as a CSV file is.
MAX_TEXT_FOLDER_BYTES = 4 * 1024**3

# A vocabulary `adapt` learns (text_vectorization, string_lookup, integer_lookup without max_tokens): a
# lookup table in the model and, usually, an embedding row per token; a million tokens is past any
# vocabulary a model is trained with (BERT's: 30,522).
MAX_VOCABULARY = 1_000_000

# An image's width x height, read from its PNG/GIF/BMP/JPEG header before it
# is decoded: 4 bytes x 2**28 pixels = 1 GiB per image, decoded once per epoch.
MAX_IMAGE_PIXELS = 1 << 28

# Folders within folders `predict` looks through for images (a folder of class
# sub-folders is 1 deep; a nest of links or a hostile tree may be any depth).
MAX_IMAGE_FOLDER_DEPTH = 32

# A run folder's JSON files (config.json, report.json, meta.json): a few KB,
# read whenever runs are listed or resumed, perhaps planted by someone else.
MAX_RUN_JSON_BYTES = 16 * 1024**2
# A run folder's history.csv, read by `netdsl runs`, `open_run` and `push`: one line per epoch (a
# line of a hundred metrics is a few KB; a million epochs of ten fit), perhaps planted.
MAX_HISTORY_BYTES = 64 * 1024**2
# Folders looked at under the DIR of `netdsl runs DIR` (run folders, sweep folders and their trials):
# a runs folder holds tens to thousands; a tree of millions would be walked in Python.
MAX_RUNS_LISTED = 100_000
# A file of a run folder `netdsl runs push` copies to a tracking server (best.keras, the curves):
# a model of MAX_PARAMS float32 parameters and its optimizer's state fit.
MAX_ARTIFACT_BYTES = 16 * 1024**3

# What an exported file records of its spec (a .tflite's metadata entry, a SavedModel folder's
# assets.extra/netdsl.json): a few hundred bytes netdsl wrote, in a file from anywhere.
MAX_EXPORT_METADATA_BYTES = 64 * 1024
# Entries of a .tflite's metadata table looked through for netdsl's: the converter writes two and
# netdsl one more, but a crafted table may declare millions, each walked in Python.
MAX_EXPORT_METADATA_ENTRIES = 1024

# A SavedModel's saved_model.pb, read whole to list its ops before TensorFlow runs it: the graph
# and its functions, not the weights (those are in variables/); resnet50.net's is 2.2 MB.
MAX_SAVED_MODEL_GRAPH_BYTES = 256 * 1024**2

# ------------------------------------------------------------------ weights files (review 2026-12b, N2 and N3)

# An array of a weights file (`init = FILE`, `--weights`, `--init-from`) is compared with the model's
# weight before it is read; before that, what it declares is bounded by what the file stores for it.
# Keras writes arrays uncompressed (1x); gzip of real weights stays near 1x, of zeros near 1000x,
# and a dataset never written stores nothing: a 4.7 KB file declared 8 GiB (security review 2026-12b, N3).
# Above 64 MiB an array may declare at most 200x what the file stores for it (as MAX_NPZ_RATIO).
MAX_WEIGHTS_RATIO = 200
MAX_WEIGHTS_PLAIN_EXPANSION = 64 * 1024**2

# A .keras file's model.weights.h5 is read into memory whole before h5py opens it: 1e9 parameters
# (MAX_PARAMS) of float64 and their groups fit; it expands by MAX_WEIGHTS_RATIO at most (a 1 MB file
# held a 1 GiB member of zeros).
MAX_WEIGHTS_MEMBER_BYTES = 16 * 1024**3

# Groups and arrays of one weights file walked to find the model's (each layer keeps a group, its
# `vars` and an array per weight): a model has at most MAX_LAYERS layers.
MAX_WEIGHTS_OBJECTS = 8 * MAX_LAYERS

# ------------------------------------------------------------------ the zoo's weights (issue 32)

# A published keras.applications weights file: VGG16's with its classifier is the largest,
# 553 MB; a server declaring (or sending) more is not one of them.
MAX_ZOO_WEIGHTS_BYTES = 1024**3
# Seconds a weights download may wait for the server to answer or to send the next bytes.
ZOO_DOWNLOAD_TIMEOUT_S = 60
