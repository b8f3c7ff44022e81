# Computes graphite-web 1.1.8's answers for targets.txt over store.json.
# Run with Debian's python3 (django, pyparsing, pytz, six) and the
# graphite-web package unpacked: see expr/reference_test.go.
import os, sys, json, re, fnmatch, math
os.environ['TZ'] = 'UTC'
sys.path.insert(0, sys.argv[1])
os.environ['DJANGO_SETTINGS_MODULE'] = 'graphite.settings'
import warnings; warnings.simplefilter('ignore')
import django
django.setup()
from django.conf import settings
settings.TIME_ZONE = 'UTC'
from datetime import datetime
import pytz
from graphite.render import evaluator
from graphite.render.datalib import TimeSeries
from graphite.errors import InputParameterError

d = os.path.dirname(os.path.abspath(__file__)) if len(sys.argv) < 3 else sys.argv[2]
store = json.load(open(os.path.join(d, 'store.json')))
# Whisper hands graphite-web floats.
for s in store:
    s['values'] = [None if v is None else float(v) for v in s['values']]

def alternatives(p):
    i = p.find('{')
    if i < 0: return [p]
    j = p.find('}', i)
    if j < 0: return [p]
    out = []
    for alt in p[i+1:j].split(','):
        out += alternatives(p[:i] + alt + p[j+1:])
    return out

def match(pattern, name):
    for alt in alternatives(pattern):
        pp, nn = alt.split('.'), name.split('.')
        if len(pp) == len(nn) and all(fnmatch.fnmatchcase(n, p) for p, n in zip(pp, nn)):
            return True
    return False

def tags_of(name):
    segs = name.split(';')
    t = {'name': segs[0]}
    for s in segs[1:]:
        k, v = s.split('=', 1)
        t[k] = v
    return t

def tag_match(expr, tags):
    for op in ('!=~', '=~', '!=', '='):
        if op in expr:
            k, v = expr.split(op, 1)
            x = tags.get(k, '')
            if op == '=': return x == v
            if op == '!=': return x != v
            if op == '=~': return re.match('^(?:' + v + ')', x) is not None
            return re.match('^(?:' + v + ')', x) is None

def cut(s, frm, until):
    start, step = s.get('start', 0), s['step']
    lo = -((start - frm) // step)  # ceil((frm-start)/step)
    hi = -((start - until) // step)
    n = len(s['values'])
    lo = max(lo, 0); hi = min(hi, n)
    if hi < lo:
        lo = max(hi, 0); hi = lo
    return start + lo * step, step, s['values'][lo:hi]

def fetchData(requestContext, pathExpr, timer=None):
    frm = int(requestContext['startTime'].timestamp())
    until = int(requestContext['endTime'].timestamp())
    out = []
    if pathExpr.startswith('seriesByTag('):
        exprs = re.findall(r"'([^']*)'|\"([^\"]*)\"", pathExpr[len('seriesByTag('):-1])
        exprs = [a or b for a, b in exprs]
        chosen = [s for s in store if all(tag_match(e, tags_of(s['name'])) for e in exprs)]
    else:
        chosen = [s for s in store if match(pathExpr, s['name'])]
    for s in sorted(chosen, key=lambda s: s['name']):
        start, step, values = cut(s, frm, until)
        ts = TimeSeries(s['name'], start, start + len(values) * step, step, list(values),
                        xFilesFactor=requestContext.get('xFilesFactor'))
        ts.pathExpression = pathExpr
        out.append(ts)
    return out

evaluator.fetchData = fetchData
evaluator.prefetchData = lambda *a, **k: None

def num(v):
    if v is None: return None
    v = float(v)
    if math.isnan(v): return 'nan'
    if math.isinf(v): return 'inf' if v > 0 else '-inf'
    return v

import signal
class Timeout(Exception):
    pass
def _alarm(signum, frame):
    raise Timeout('no answer within 5 s')
signal.signal(signal.SIGALRM, _alarm)

results = []
for line in open(os.path.join(d, 'targets.txt')):
    line = line.rstrip('\n')
    if not line or line.startswith('#'): continue
    frm, until, target = line.split(' ', 2)
    frm, until = int(frm), int(until)
    ctx = {
        'startTime': datetime.fromtimestamp(frm, pytz.utc),
        'endTime': datetime.fromtimestamp(until, pytz.utc),
        'now': datetime.fromtimestamp(until, pytz.utc),
        'localOnly': False, 'template': {}, 'targets': [target],
        'tzinfo': pytz.utc, 'xFilesFactor': 0, 'prefetched': {},
    }
    r = {'from': frm, 'until': until, 'target': target}
    try:
        signal.alarm(5)
        series = evaluator.evaluateTarget(ctx, target)
        signal.alarm(0)
        r['series'] = [{
            'name': s.name, 'pathExpression': s.pathExpression, 'start': s.start, 'step': s.step * s.valuesPerPoint,
            'values': [num(v) for v in s], 'tags': {k: str(v) for k, v in s.tags.items()},
            'consolidationFunc': s.consolidationFunc, 'xFilesFactor': num(s.xFilesFactor),
        } for s in series]
    except Exception as e:
        signal.alarm(0)
        r['error'] = type(e).__name__ + ': ' + str(e)
    results.append(r)

json.dump(results, open(os.path.join(d, 'expected.json'), 'w'), indent=1, sort_keys=True)
print(len(results), 'targets', file=sys.stderr)
