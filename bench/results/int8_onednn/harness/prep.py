import json, os, sys, subprocess, tempfile, torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../peers"))
import qa_pipeline_bench as q
from transformers import AutoTokenizer, BertForQuestionAnswering
torch.manual_seed(5)
model = BertForQuestionAnswering.from_pretrained(q.MINILM).eval()
with torch.no_grad():
    model.qa_outputs.weight.normal_(0.0, 0.1); model.qa_outputs.bias.zero_()
tok = AutoTokenizer.from_pretrained(q.MINILM)
docs = q.documents(tok, 4, 8192)
json.dump(docs, open("/tmp/qa/docs.json", "w"))
model.save_pretrained("/tmp/qa/hf", safe_serialization=True); tok.save_pretrained("/tmp/qa/hf")
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../tools/import_hf.py"), "/tmp/qa/hf", "/tmp/qa/longqa",
                "--window_tokens=256", "--stride_tokens=224"], check=True)
