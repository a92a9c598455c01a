# Can MiniLM learn the synthetic yes/no questions from (question, gold paragraph) pairs?
import json, random, sys, torch
from transformers import BertForSequenceClassification, BertTokenizerFast
torch.manual_seed(0); random.seed(0)
M = "/work/main/third_party/minilm"
tok = BertTokenizerFast(tokenizer_file=M + "/tokenizer.json")
model = BertForSequenceClassification.from_pretrained(M, num_labels=2)
def load(path):
    out = []
    for l in open(path):
        g = json.loads(l)
        joined = "\n\n".join(g["paragraphs"]).encode()
        la = g["long_answer"]
        para = joined[la["start_byte"]:la["end_byte"]].decode()
        out.append((g["question"], para, int(g["yes_no_answer"] == "YES")))
    return out
train = load("/work/minilm-train/data/yn/train.jsonl")
dev = load("/work/recal/yesno_dev.jsonl")
opt = torch.optim.AdamW(model.parameters(), lr=float(sys.argv[1]) if len(sys.argv) > 1 else 5e-5)
def acc(data):
    model.eval(); right = 0
    with torch.no_grad():
        for i in range(0, len(data), 32):
            b = data[i:i+32]
            x = tok([q for q, _, _ in b], [p for _, p, _ in b], padding=True, return_tensors="pt")
            right += (model(**x).logits.argmax(1) == torch.tensor([y for *_, y in b])).sum().item()
    model.train(); return right / len(data)
print("step 0 dev acc", acc(dev), flush=True)
for step in range(1, 301):
    b = random.sample(train, 16)
    x = tok([q for q, _, _ in b], [p for _, p, _ in b], padding=True, return_tensors="pt")
    loss = model(**x, labels=torch.tensor([y for *_, y in b])).loss
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 25 == 0:
        print("step", step, "loss %.3f" % loss.item(), "dev acc %.3f" % acc(dev), flush=True)
