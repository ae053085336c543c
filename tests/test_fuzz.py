"""A small budget of the seeded fuzzer (tests/fuzz.py; `python3 tasks.py fuzz` runs 100,000):
mutated real rows and generated hostile trees through the decoder, the reducers, the diff, the
JSON output and the renderers end in statectl's own DecodeError or in output, never elsewhere."""

from __future__ import annotations

import json

from fuzz import run


def test_no_input_escapes_as_an_uncaught_exception():
    assert run(1500, seed=7, show=3) == 0


def test_json_output_holds_what_orjson_refuses():
    """Integers beyond 64 bits, keys that are not text, nesting deeper than orjson's 254 levels:
    a valid state; `--json` still prints it (deeper than 200 levels: a placeholder says so)."""
    from statectl.codec.jsonout import json_bytes

    deep: object = "leaf"
    for _ in range(300):
        deep = [deep]
    out = json.loads(json_bytes({"big": 2**80, (1, 2): "tuple key", 3: "int key", "deep": deep}))
    assert out["big"] == 2**80
    assert out["(1, 2)"] == "tuple key"
    assert out["3"] == "int key"
    level = out["deep"]
    for _ in range(199):
        level = level[0]
    assert "nested deeper" in json.dumps(level)
