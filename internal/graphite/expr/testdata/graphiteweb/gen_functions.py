import os, sys, json
os.environ['TZ'] = 'UTC'
sys.path.insert(0, sys.argv[1])
os.environ['DJANGO_SETTINGS_MODULE'] = 'graphite.settings'
import warnings; warnings.simplefilter('ignore')
import django
django.setup()
import inspect
# Python 3.11 dropped these; Debian's graphite-web 1.1.8 still calls them.
def _getargspec(f):
    a = inspect.getfullargspec(f)
    return (a.args, a.varargs, a.varkw, a.defaults)
def _formatargspec(args, varargs=None, varkw=None, defaults=None):
    specs = []
    first_default = len(args) - len(defaults) if defaults else len(args)
    for i, a in enumerate(args):
        spec = a
        if defaults and i >= first_default:
            spec += '=' + repr(defaults[i - first_default])
        specs.append(spec)
    if varargs is not None:
        specs.append('*' + varargs)
    if varkw is not None:
        specs.append('**' + varkw)
    return '(' + ', '.join(specs) + ')'
inspect.getargspec = _getargspec
inspect.formatargspec = _formatargspec
from graphite.functions import SeriesFunctions, functionInfo
from graphite.functions.views import jsonInfinityEncoder
out = {}
for name, func in SeriesFunctions().items():
    info = functionInfo(name, func)
    del info['description']
    out[name] = info
s = jsonInfinityEncoder(sort_keys=True, indent=1).encode(out)
open(sys.argv[2], 'w').write(s)
