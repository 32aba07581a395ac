"""Generate examples/datasets/text_sentiment.csv: 600 short synthetic sentences.

Each sentence mixes 3-6 neutral filler words with 1-2 words of its class's sentiment
(none for "neutral"), and 8 % of the labels are flipped at random, so a good model
scores about 0.9 accuracy, not 1. Deterministic: rerunning gives the same bytes.

    python examples/datasets/make_text_sentiment.py [output.csv]
"""

import csv
import os
import sys

import numpy as np

POSITIVE = [
    "good",
    "great",
    "excellent",
    "lovely",
    "wonderful",
    "pleasant",
    "happy",
    "superb",
    "enjoyable",
    "delightful",
    "fine",
    "brilliant",
]
NEGATIVE = [
    "bad",
    "awful",
    "terrible",
    "poor",
    "boring",
    "horrible",
    "sad",
    "dreadful",
    "disappointing",
    "annoying",
    "weak",
    "ugly",
]
FILLER = [
    "the",
    "movie",
    "was",
    "food",
    "service",
    "a",
    "really",
    "quite",
    "show",
    "book",
    "it",
    "and",
    "day",
    "place",
    "staff",
    "very",
    "this",
    "story",
    "trip",
    "hotel",
    "music",
    "overall",
    "experience",
    "today",
]
LABELS = ("negative", "neutral", "positive")
N_ROWS, FLIP = 600, 0.08


def make_rows(seed: int = 20240517) -> list[tuple[str, str, str]]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(N_ROWS):
        label = LABELS[i % 3]
        words = list(rng.choice(FILLER, size=rng.integers(3, 7)))
        if label != "neutral":
            pool = POSITIVE if label == "positive" else NEGATIVE
            words += list(rng.choice(pool, size=rng.integers(1, 3)))
        rng.shuffle(words)
        if rng.random() < FLIP:
            label = LABELS[(LABELS.index(label) + rng.integers(1, 3)) % 3]
        rows.append((f"s{i:04d}", " ".join(words), label))
    order = rng.permutation(N_ROWS)
    return [rows[j] for j in order]


def main(path: str) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["id", "text", "label"])
        writer.writerows(make_rows())


if __name__ == "__main__":
    main(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.path.join(os.path.dirname(os.path.abspath(__file__)), "text_sentiment.csv")
    )
