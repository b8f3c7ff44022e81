#!/usr/bin/python3
# Makes random pickle frames (argv[1] of them, seed argv[2]) of the shapes
# senders use and some they should not, and prints as JSON, for each, the
# payload (hex) and what carbon's MetricPickleReceiver.stringReceived makes
# of it: refused (SafeUnpickler error) or the (path, timestamp, value)
# entries it passes on. Used by TestDecodePickleAgainstCarbon.
import json
import pickle
import random
import sys

from carbon.util import get_unpickler

n, seed = int(sys.argv[1]), int(sys.argv[2])
rnd = random.Random(seed)
names = ["a.b.c", "x.y;dc=eu", "caf\u00e9.\u20ac", "s\\x", "q'uote\"d", "nl\nin", "\u0000", ""]
nums = [0, 1, -1, 1700000000, 1700000000.5, 2**31, -2**31 - 1, 2**63, 10**30, -10**20, 1.5e-300, float("inf"), float("-inf"),
        True, False, "12.5", " 7 ", "1_0", "x", None, b"1"]


def entry():
    r = rnd.random()
    p, t, v = rnd.choice(names), rnd.choice(nums), rnd.choice(nums)
    if r < 0.75:
        return (p, (t, v))
    if r < 0.85:
        return [p, [t, v]]
    if r < 0.9:
        return (p, (t, v, v))
    if r < 0.95:
        return (rnd.choice(nums[:-1]), (t, v))  # not bytes: carbon 1.1 fails on bytes paths
    return p


out = []
for _ in range(n):
    data = [entry() for _ in range(rnd.randint(0, 8))]
    if rnd.random() < 0.1:
        data = tuple(data)
    proto = rnd.choice([0, 1, 2, 3, 4, 5])
    try:
        payload = pickle.dumps(data, protocol=proto)
    except Exception:
        continue
    res = {"payload": payload.hex(), "proto": proto}
    try:
        datapoints = get_unpickler().loads(payload)
    except Exception as e:
        res["refused"] = str(e)
        out.append(res)
        continue
    got = []
    for raw in datapoints:
        try:
            (metric, (value, timestamp)) = raw
        except Exception:
            continue
        try:
            datapoint = (float(value), float(timestamp))
        except (ValueError, TypeError, OverflowError):
            continue
        if not isinstance(metric, str):
            continue  # a number as the path: carbon would fail on .encode
        got.append([metric, repr(datapoint[0]), repr(datapoint[1])])
    res["entries"] = got
    out.append(res)
print(json.dumps(out))
