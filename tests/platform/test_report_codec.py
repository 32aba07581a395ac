"""The stored reports' JSON codec (leaderboard.jsoncodec): the values json would give, faster."""

import json
import math
import random

from leaderboard.jsoncodec import FastJSONDecoder, FastJSONEncoder
from leaderboard.models import PrivateReport, Report


def test_the_codec_round_trips_what_json_does():
    rng = random.Random(0)
    floats = [rng.random() * 10 ** rng.randint(-300, 300) for _ in range(2000)]
    floats += [0.1, 5e-324, -0.0, 1.7976931348623157e308]
    value = {"b": floats, "a": {1: "é", "none": None, "t": (1, True)}, "big": 2**63 - 1}
    text = json.dumps(value, cls=FastJSONEncoder)
    back = json.loads(text, cls=FastJSONDecoder)
    assert back == json.loads(json.dumps(value)) and list(back) == ["b", "a", "big"]  # key order kept
    assert all(math.copysign(1, x) == math.copysign(1, y) for x, y in zip(back["b"], floats))


def test_what_orjson_refuses_falls_back_to_json():
    assert json.dumps([2**70], cls=FastJSONEncoder) == "[1180591620717411303424]"
    assert math.isnan(json.loads("[NaN]", cls=FastJSONDecoder)[0])
    assert json.dumps({"b": 1, "a": 2}, cls=FastJSONEncoder, sort_keys=True) == '{"a": 2, "b": 1}'


def test_the_report_fields_use_the_codec():
    for model in (Report, PrivateReport):
        field = model._meta.get_field("data")
        assert field.encoder is FastJSONEncoder and field.decoder is FastJSONDecoder
