# Parses parse_inputs.txt with graphite-web 1.1.8's own grammar (pyparsing)
# and writes parse_expected.json: the canonical form of each parse as the
# evaluator reads it (pipes unfolded), or the error. See parse_ref_test.go.
import os, sys, json
sys.path.insert(0, sys.argv[1])
os.environ['DJANGO_SETTINGS_MODULE'] = 'graphite.settings'
import warnings; warnings.simplefilter('ignore')
import django
django.setup()
from graphite.render.grammar_unsafe import grammar

def canon(tokens, piped=None):
    if tokens.expression:
        if tokens.expression.pipedCalls.asList():
            rightMost = tokens.expression.pipedCalls.pop()
            return canon(rightMost, tokens)
        return canon(tokens.expression)
    if tokens.pathExpression:
        return 'P(%s)' % tokens.pathExpression
    if tokens.call:
        args = [canon(a) for a in (tokens.call.args or [])]
        if piped is not None:
            args.insert(0, canon(piped))
        kwargs = ['%s=%s' % (k.argname, canon(k.args[0])) for k in tokens.call.kwargs]
        return 'C(%s;%s)' % (tokens.call.funcname, ';'.join(args + kwargs))
    if tokens.number:
        if tokens.number.integer:
            return 'I(%s)' % tokens.number.integer
        if tokens.number.float:
            return 'F(%s)' % tokens.number.float
        return 'F(%s)' % tokens.number.scientific[0]
    if tokens.string:
        return 'S(%s)' % tokens.string[1:-1]
    if tokens.boolean:
        return 'B(%s)' % tokens.boolean[0].lower()
    if tokens.none:
        return 'NONE'
    if tokens.infinity:
        return 'INF'
    return '?'

d = sys.argv[2]
out = []
for line in open(os.path.join(d, 'parse_inputs.txt')):
    s = line.rstrip('\n')
    r = {'input': s}
    try:
        r['full'] = canon(grammar.parseString(s, parseAll=True))
    except Exception as e:
        r['error'] = str(e)
        try:
            r['prefix'] = canon(grammar.parseString(s))
        except Exception:
            pass
    out.append(r)
json.dump(out, open(os.path.join(d, 'parse_expected.json'), 'w'), indent=1, sort_keys=True)
