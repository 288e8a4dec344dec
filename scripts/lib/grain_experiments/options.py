"""Command-line values every driver parses the same way: comma-separated lists of numbers."""

import argparse


def number_list(text, kind=int, minimum=None):
    """'1,2,4' -> [1, 2, 4]; ValueError with a message for anything else, an empty list, or a
    value below `minimum`."""
    what = "integers" if kind is int else "numbers"
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ValueError(f"not a list of {what}: {text}") from None
    if not values:
        raise ValueError(f"an empty list: {text!r}")
    if minimum is not None and min(values) < minimum:
        raise ValueError(f"need {what} >= {minimum:g}: {text}")
    return values


def numbers(kind=int, minimum=None):
    """An argparse type: `type=numbers(int, 1)` for --nx=1000,5000 (errors exit 2)."""
    def parse(text):
        try:
            return number_list(text, kind, minimum)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    parse.__name__ = "list of " + kind.__name__
    return parse
