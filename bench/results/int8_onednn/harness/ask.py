# ask.py PORT ROUNDS: asks the 4 documents ROUNDS times; prints tokens/s per round
import json, sys, time
import os
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../peers"))
import qa_pipeline_bench as q
docs = json.load(open("/tmp/qa/docs.json"))
port, rounds = int(sys.argv[1]), int(sys.argv[2])
q.ask(port, docs[0][1], docs[0][0][:2000])
for r in range(rounds):
    t = time.perf_counter()
    spans = [q.ask(port, question, text) for text, question, _ in docs]
    s = time.perf_counter() - t
    print(f"round {r}: {sum(d[2] for d in docs) / s:.0f} tokens/s {spans}", flush=True)
