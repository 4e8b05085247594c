"""Journey (f), as a user takes it on the command line: a CSV of sentences with a topic each -> a text
classifier whose vocabulary is adapted on the training split -> evaluate -> predictions on new sentences
(a CSV, a folder of .txt files, one .txt file) with class names -> a SavedModel that holds the
vocabulary and names the same classes; ONNX refused in one line.

Issue 28, items 6 and 8(f). The sentences are written by the test (three topics, phrases drawn at
random), so that a few epochs learn them; every step runs `netdsl` in its own process.
"""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest

from tests.journeys import netdsl

TOPICS = ("cooking", "sports", "weather")  # sorted: the order the classes take
PHRASES = {
    "sports": (
        [
            "the striker scored",
            "our team won the match",
            "the coach praised the defenders",
            "a late goal decided the final",
            "the goalkeeper saved a penalty",
            "fans cheered in the stadium",
            "the referee showed a red card",
        ],
        ["after halftime", "in the league", "on saturday", "against the champions", "in extra time"],
    ),
    "cooking": (
        [
            "simmer the onions",
            "bake the bread",
            "whisk the eggs with sugar",
            "season the soup with salt",
            "roast the vegetables",
            "knead the dough",
            "stir the sauce slowly",
        ],
        ["for ten minutes", "until golden", "in a hot oven", "over low heat", "before serving"],
    ),
    "weather": (
        [
            "heavy rain is expected",
            "a cold front moves in",
            "skies will clear",
            "strong winds hit the coast",
            "snow falls in the mountains",
            "temperatures drop sharply",
            "a warm sunny day ahead",
        ],
        ["tonight", "by the weekend", "across the north", "this afternoon", "with scattered showers"],
    ),
}
SPEC = """\
model topics {
  input text: (1,) as string
  tokens = text -> text_vectorization(max_tokens=500, output_sequence_length=12)
  h = tokens -> embedding(500, 16) -> global_average_pooling1d
  output topic = h -> dense(3, activation=softmax)
  train {
    optimizer = adam(learning_rate=0.02)
    loss = sparse_categorical_crossentropy
    metrics = [accuracy]
    epochs = 8
    batch_size = 16
    adapt = ["tokens"]
  }
}
"""


def sentences(count: int, seed: int) -> list[tuple[str, str]]:
    """(sentence, topic) pairs: a topic's opening phrase and one of its endings."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        topic = rng.choice(TOPICS)
        openings, endings = PHRASES[topic]
        out.append((f"{rng.choice(openings).capitalize()} {rng.choice(endings)}.", topic))
    return out


@pytest.fixture(scope="module")
def journey(tmp_path_factory):
    """reviews.csv (ref, sentence, topic), new.csv (sentence only) and new/ (.txt files, one a level down)."""
    work = tmp_path_factory.mktemp("text_journey")
    with (work / "reviews.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ref", "sentence", "topic"])
        writer.writerows((f"post-{i:03d}", text, topic) for i, (text, topic) in enumerate(sentences(180, 1)))
    new = sentences(9, 2)
    with (work / "new.csv").open("w", newline="") as fh:
        csv.writer(fh).writerows([["sentence"], *([text] for text, _ in new)])
    (work / "new" / "later").mkdir(parents=True)
    for i, (text, _) in enumerate(new):
        (work / "new" / ("later" if i >= 6 else "") / f"note{i}.txt").write_text(text + "\n")
    (work / "topics.net").write_text(SPEC)
    return work, [topic for _, topic in new]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_sentences_to_a_text_classifier_to_predictions_and_a_saved_model(journey):
    work, truth = journey
    # two text columns: which one is the text is the user's to say
    both = netdsl(work, "train", "topics.net", "--data", "reviews.csv", "--progress", "none")
    assert (both.returncode, both.stderr) == (
        1,
        (
            "reviews.csv:1:1: error: input 'text' takes one text column, found 2 ('ref', 'sentence'); name it with "
            "--features COLUMN\n"
        ),
    )

    trained = netdsl(work, "train", "topics.net", "--data", "reviews.csv", "--features", "sentence", "--seed", "0")
    assert trained.returncode == 0, trained.stderr
    adapted = [line for line in trained.stderr.splitlines() if line.startswith("adapt:")]
    assert len(adapted) == 1 and adapted[0].startswith(
        "adapt: tokens (text_vectorization) on 144 training samples: a vocabulary of "
    )  # 0.8 of 180 rows
    config = json.loads((work / "runs/topics-1/config.json").read_text())
    assert config["classes"] == {"topic": list(TOPICS)}
    assert config["columns"] == {"text": ["sentence"]}
    assert config["adapted"] == adapted

    evaluated = netdsl(work, "evaluate", "runs/topics-1")
    assert evaluated.returncode == 0, evaluated.stderr
    lines = evaluated.stdout.splitlines()
    assert lines[1].split()[0] == "accuracy" and float(lines[1].split()[1]) >= 0.9
    assert lines[2] == "classes: cooking, sports, weather"

    # new sentences: a CSV with the text column alone, a folder of .txt files, one .txt file
    predicted = netdsl(work, "predict", "runs/topics-1", "--data", "new.csv", "-o", "preds.csv")
    assert predicted.returncode == 0, predicted.stderr
    assert predicted.stdout == "wrote preds.csv (9 samples; topic (9, 3))\n"
    table = rows(work / "preds.csv")
    assert list(table[0]) == ["source", "class", *TOPICS]
    assert [row["class"] for row in table] == truth
    folder = netdsl(work, "predict", "runs/topics-1", "--data", "new", "-o", "folder.csv")
    assert folder.returncode == 0, folder.stderr
    by_file = {row["source"]: row["class"] for row in rows(work / "folder.csv")}
    assert by_file == {(f"later/note{i}.txt" if i >= 6 else f"note{i}.txt"): topic for i, topic in enumerate(truth)}
    single = netdsl(work, "predict", "runs/topics-1", "--data", "new/note0.txt", "-o", "one.json")
    assert single.returncode == 0, single.stderr
    (only,) = json.loads((work / "one.json").read_text())["predictions"]
    assert (only["source"], only["class"]) == ("note0.txt", truth[0])

    # shipped: a SavedModel holds the string ops and the vocabulary; ONNX cannot, said in one line
    onnx = netdsl(work, "export", "runs/topics-1", "--format", "onnx")
    assert onnx.returncode == 1
    assert onnx.stderr.splitlines()[-1] == (
        "netdsl export: error: the model takes text (input 'text' as string), which onnx cannot hold: tf2onnx "
        "converts no string ops (StringLower, StringSplit, the vocabulary's hash table), and standard ONNX has "
        "none; export it with --format saved_model, which holds the string ops and the vocabulary"
    )
    exported = netdsl(work, "export", "runs/topics-1", "--format", "saved_model")
    assert exported.returncode == 0, exported.stderr
    from_file = netdsl(work, "predict", "runs/topics-1/topics_saved_model", "--data", "new.csv", "-o", "sm.csv")
    assert from_file.returncode == 0, from_file.stderr
    best = netdsl(work, "predict", "runs/topics-1/best.keras", "--data", "new.csv", "-o", "best.csv")
    assert best.returncode == 0, best.stderr
    shipped, kept = rows(work / "sm.csv"), rows(work / "best.csv")
    assert [row["class"] for row in shipped] == truth
    for a, b in zip(shipped, kept):
        assert [float(a[t]) for t in TOPICS] == pytest.approx([float(b[t]) for t in TOPICS], abs=1e-5)


def test_a_folder_of_text_files_per_class_trains_and_names_its_classes(journey):
    work, truth = journey
    for i, (text, topic) in enumerate(sentences(90, 3)):
        (work / "posts" / topic).mkdir(parents=True, exist_ok=True)
        (work / "posts" / topic / f"{i:03d}.txt").write_text(text)
    trained = netdsl(
        work, "train", "topics.net", "--data", "posts", "--seed", "0", "--progress", "none", "-o", "folder_runs"
    )
    assert trained.returncode == 0, trained.stderr
    config = json.loads((work / "folder_runs/topics-1/config.json").read_text())
    assert config["classes"] == {"topic": list(TOPICS)}  # the class sub-folders, in name order
    predicted = netdsl(work, "predict", "folder_runs/topics-1", "--data", "new.csv", "-o", "posts.csv")
    assert predicted.returncode == 0, predicted.stderr
    assert sum(row["class"] == topic for row, topic in zip(rows(work / "posts.csv"), truth)) >= 7
