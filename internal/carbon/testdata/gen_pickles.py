#!/usr/bin/env python3
# Generates the pickle fixtures of pickle_test.go with the machine's Python:
#   cd internal/carbon/testdata && python3 gen_pickles.py
# Each fixture is one frame payload (no length prefix). Python 2 senders'
# pickles are written by hand below (Python 3 cannot emit them) and checked
# by loading them back here.
import pickle, os, struct

data = [
    ("a.b.c", (1700000000, 1.5)),
    ("x.y;env=prod;dc=eu", (1700000010.5, -2)),
    ("big.int", (1700000020, 10**30)),
    ("str.num", ("1700000030", "42.5")),
    ("bool.v", (1700000040, True)),
    ("caf\u00e9.\u20ac\\x", (1700000050, 0.25)),
    ("a.b.c", (1700000060, 2.5)),
]
for p in [0, 1, 2, 3, 4, 5]:
    with open("pickle_proto%d.bin" % p, "wb") as f:
        f.write(pickle.dumps(data, protocol=p))
# Shared memo references: the same tuple three times.
t = ("memo.path", (1700000000, 7))
with open("pickle_memo_proto2.bin", "wb") as f:
    f.write(pickle.dumps([t, t, t], protocol=2))
with open("pickle_memo_proto4.bin", "wb") as f:
    f.write(pickle.dumps([t, t, t], protocol=4))

# Python 2 pickles (as carbon's own Python 2 clients send), by hand.
py2 = {
    "pickle_py2_proto0.bin": b"(lp0\n(S'a.b.c'\np1\n(I1700000000\nF1.5\ntp2\ntp3\na(S'x.y\\x41'\np4\n(L1700000010L\nI01\ntp5\ntp6\na.",
    "pickle_py2_proto2.bin": b"\x80\x02]q\x00(U\x05a.b.cq\x01J\x00\xf1SeG?\xf8\x00\x00\x00\x00\x00\x00\x86q\x02\x86q\x03U\x04x.yAq\x04\x8a\x05\x0a\xf1Se\x00\x88\x86q\x05\x86q\x06e.",
}
for name, b in py2.items():
    got = pickle.loads(b, encoding="utf-8")
    assert got == [("a.b.c", (1700000000, 1.5)), ("x.yA", (1700000010, True))], got
    with open(name, "wb") as f:
        f.write(b)

# Malicious pickles: must be refused without running anything.
class Evil:
    def __reduce__(self):
        return (os.system, ("touch /tmp/pwned-by-aerie",))
with open("evil_reduce_proto2.bin", "wb") as f:
    f.write(pickle.dumps([("a.b", (1, Evil()))], protocol=2))
with open("evil_reduce_proto4.bin", "wb") as f:
    f.write(pickle.dumps([("a.b", (1, Evil()))], protocol=4))
with open("evil_global_proto0.bin", "wb") as f:
    f.write(b"cos\nsystem\n(S'touch /tmp/pwned-by-aerie'\ntR.")
# bytes under protocol 2 pickle as _codecs.encode + REDUCE: refused as carbon's SafeUnpickler does.
with open("evil_codecs_proto2.bin", "wb") as f:
    f.write(pickle.dumps([(b"a.b", (1, 2))], protocol=2))
