#!/usr/bin/python3
# Runs carbon's own plaintext handling over the JSON list of lines on stdin
# and prints one JSON result per line: MetricLineReceiver.lineReceived
# (strip, split, float), MetricReceiver.metricReceived (NaN filter, -1 is
# now) and CacheFeedingProcessor.process (TaggedSeries.parse(...).path).
# Used by TestParseLineAgainstCarbon with Debian's graphite-carbon.
import json
import sys

from carbon.util import TaggedSeries

out = []
for line in json.load(sys.stdin):
    try:
        metric, value, timestamp = line.strip().split()
        datapoint = (float(timestamp), float(value))
    except ValueError:
        out.append({"err": "malformed"})
        continue
    if datapoint[1] != datapoint[1]:
        out.append({"err": "nan"})
        continue
    try:
        now = int(datapoint[0]) == -1
    except (OverflowError, ValueError):
        out.append({"err": "crash"})  # uncaught in carbon
        continue
    try:
        path = TaggedSeries.parse(metric).path
    except Exception:
        out.append({"err": "tags"})  # carbon logs and keeps the raw path
        continue
    out.append({"path": path, "now": now, "ts": repr(datapoint[0]), "value": repr(datapoint[1])})
print(json.dumps(out))
