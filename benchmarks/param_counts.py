"""Trainable parameters of every zoo preset at paper settings, as a markdown table.

    python benchmarks/param_counts.py [--classes 5] [--max-length 50]

Counts exclude the word embedding (as the papers do). ``n-independent`` is
the count with ``max_length=1``, where the paper-text MPSAN's
position-dependent fusion bias adds nothing; ``at max_length`` adds that
bias's ``5 * d * (max_length - 1)`` extra entries.
"""

import argparse

from keras_posattn.cli import quiet_tensorflow  # noqa: E402

quiet_tensorflow()  # before TensorFlow loads: no C++ start-up chatter

from keras_posattn import zoo  # noqa: E402
from keras_posattn.utils import count_parameters  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--max-length", type=int, default=50)
    parser.add_argument("--pattern", default="*")
    args = parser.parse_args()
    print(f"| model | n-independent | at max_length={args.max_length} | description |")
    print("|---|---:|---:|---|")
    for name in zoo.list_models(args.pattern):
        base = count_parameters(zoo.build(name, num_classes=args.classes,
                                          vocabulary_size=100, max_length=1))
        full = count_parameters(zoo.build(name, num_classes=args.classes,
                                          vocabulary_size=100, max_length=args.max_length))
        desc = zoo.get_preset(name).get("description", "")
        print(f"| `{name}` | {base:,} | {full:,} | {desc} |")


if __name__ == "__main__":
    main()
