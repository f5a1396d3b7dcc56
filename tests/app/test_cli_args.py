"""The float parsers of the command line: what each accepts, and its one message otherwise."""

from __future__ import annotations

import argparse
import math

import pytest

from spectheory.app.cli_args import finite_float, max_seconds, nonneg_float, positive_float

REFUSED = {
    nonneg_float: ("must be a finite number >= 0", ["-1", "-0.5", "inf", "nan", "1e999", "abc", ""]),
    finite_float: ("must be a finite number", ["inf", "-inf", "nan", "+Infinity", "-1e999", "abc", ""]),
    positive_float: ("must be a finite number > 0", ["0", "-0.0", "-2", "inf", "nan", "1e999", "abc", ""]),
    max_seconds: ("expected a number of seconds > 0 (or inf)", ["0", "-1", "nan", "-inf", "abc", ""]),
}

ACCEPTED = {
    nonneg_float: [("0", 0.0), ("2.5", 2.5), (" 1e-3 ", 1e-3)],
    finite_float: [("-3", -3.0), ("0", 0.0), ("1e300", 1e300)],
    positive_float: [("0.05", 0.05), ("1e-300", 1e-300)],
    max_seconds: [("0.001", 0.001), ("60", 60.0), ("inf", math.inf)],
}


@pytest.mark.parametrize("parse", list(REFUSED), ids=lambda f: f.__name__)
def test_float_parsers_refuse_with_their_own_message(parse):
    message, texts = REFUSED[parse]
    for text in texts:
        with pytest.raises(argparse.ArgumentTypeError) as info:
            parse(text)
        assert str(info.value) == f"{message}, got {text!r}"


@pytest.mark.parametrize("parse", list(ACCEPTED), ids=lambda f: f.__name__)
def test_float_parsers_return_the_number(parse):
    for text, value in ACCEPTED[parse]:
        assert parse(text) == value
