import json, sys
from collections import Counter
gold = {json.loads(l)['example_id']: json.loads(l) for l in open(sys.argv[1])}
for f in sys.argv[2:]:
    P = json.load(open(f))['predictions']
    c = Counter((gold[p['example_id']]['yes_no_answer'], p['yes_no_answer']) for p in P)
    right = sum(v for (g, p), v in c.items() if g == p)
    print(f.split('/')[-1], dict(c), 'right %d/%d' % (right, len(P)))
