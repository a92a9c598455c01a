"""A converted *ForQuestionAnswering checkpoint served by longqa-server (qa_format squad) against
transformers' question-answering pipeline on the same windows: the same best span on >= 99% of
200 long documents, each difference printed with its cause.

The checkpoint: all-MiniLM-L6-v2's encoder under a random QA head (normal(0, 0.1), so span
logits spread over a few units as a trained head's do). Documents: runs of paragraphs of the
license texts every Debian has (/usr/share/common-licenses), 450-1,100 tokens: 5-11 windows of
128 context tokens with a stride of 96. The pipeline sees the same windows when max_seq_len =
question tokens + 3 + 128 and doc_stride = 128 - 96 (its overlap). Spans: at most 15 tokens
(the pipeline's max_answer_len default), aligned to whole words (its align_to_words default),
no null answer (its handle_impossible_answer default: the server gets null_threshold -1e30).

The one kind of difference found (1 of 200 on the first run): the same tokens and score, but the
pipeline widens a span to whole words with the window's own encoding, so a word that the window's
edge cuts in two stays cut ('Patent Claims infr'); longqa widens it to the whole word of the
document ('Patent Claims infringed'). The test explains a difference that way only when the
pipeline's span lies inside longqa's with the same score; any other difference fails it.
"""
import os
import random
import sys

import grpc
import pytest
import torch
from transformers import AutoTokenizer, BertForQuestionAnswering, pipeline

from longqa_process import start_server
from test_import_hf import MINILM, import_model

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LICENSES = "/usr/share/common-licenses"
WINDOW, STRIDE, MAX_ANSWER = 128, 96, 15
DOCUMENTS = 200
QUESTIONS = ["What may you do with the software?", "Who holds the copyright?",
             "When does the license terminate?", "What must a distributor include?",
             "Which warranty is disclaimed?", "What is a derivative work?",
             "Where is the source code?", "How can the program be modified?"]


def paragraphs():
    out = []
    for name in sorted(os.listdir(LICENSES)):
        path = os.path.join(LICENSES, name)
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8") as f:
                out += [" ".join(p.split()) for p in f.read().split("\n\n") if len(p.split()) > 5]
    return out


def documents(tokenizer):
    pool, rng, docs = paragraphs(), random.Random(7), []
    while len(docs) < DOCUMENTS:
        start, target = rng.randrange(len(pool)), rng.randint(450, 1100)
        parts, tokens = [], 0
        for p in pool[start:]:
            parts.append(p)
            tokens += len(tokenizer(p, add_special_tokens=False)["input_ids"])
            if tokens >= target:
                break
        if tokens >= 450:
            docs.append(("\n\n".join(parts), rng.choice(QUESTIONS)))
    return docs


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    out = tmp_path_factory.mktemp("stubs")
    from grpc_tools import protoc
    assert protoc.main(["protoc", f"-I{ROOT}/proto", f"--python_out={out}",
                        f"--grpc_python_out={out}", f"{ROOT}/proto/longqa/v1/qa.proto"]) == 0
    sys.path.insert(0, str(out))
    from longqa.v1 import qa_pb2, qa_pb2_grpc
    return qa_pb2, qa_pb2_grpc


def test_same_best_span_as_the_transformers_pipeline(tmp_path, stubs):
    qa_pb2, qa_pb2_grpc = stubs
    torch.manual_seed(5)
    model = BertForQuestionAnswering.from_pretrained(MINILM).eval()
    with torch.no_grad():
        model.qa_outputs.weight.normal_(0.0, 0.1)
        model.qa_outputs.bias.zero_()
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    hf_dir = tmp_path / "hf"
    model.save_pretrained(hf_dir, safe_serialization=True)
    tokenizer.save_pretrained(hf_dir)
    converted = import_model(str(hf_dir), str(tmp_path / "longqa"), f"--window_tokens={WINDOW}",
                             f"--stride_tokens={STRIDE}")
    assert converted["qa_format"] == "squad" and converted["untrained_heads"] == []

    torch.set_num_threads(2)
    qa = pipeline("question-answering", model=model, tokenizer=tokenizer, device=-1)
    proc, port, _, _ = start_server(str(tmp_path / "longqa"))
    try:
        stub = qa_pb2_grpc.QuestionAnsweringStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        same, differences, unexplained, worst_score = 0, [], [], 0.0
        docs = documents(tokenizer)
        for i, (text, question) in enumerate(docs):
            q = len(tokenizer(question, add_special_tokens=False)["input_ids"])
            ref = qa(question=question, context=text, max_seq_len=q + 3 + WINDOW,
                     doc_stride=WINDOW - STRIDE, max_answer_len=MAX_ANSWER)
            ref_span = (len(text[:ref["start"]].encode()), len(text[:ref["end"]].encode()))
            reply = stub.Answer(qa_pb2.AnswerRequest(
                question=question.encode(), document=qa_pb2.Document(text=text.encode()),
                options=qa_pb2.AnswerOptions(max_short_answer_tokens=MAX_ANSWER, n_best=1,
                                             null_threshold=-1e30)), timeout=120)
            assert reply.answer_type == qa_pb2.ANSWER_TYPE_SHORT, reply
            best = reply.short_answers[0]
            span = (best.byte_begin, best.byte_end)
            if span == ref_span:
                same += 1
                worst_score = max(worst_score, abs(best.score - ref["score"]) / ref["score"])
            else:
                cut_word = (span[0] <= ref_span[0] and ref_span[1] <= span[1]
                            and abs(best.score - ref["score"]) <= 1e-3 * ref["score"])
                line = (f"document {i} ({reply.usage.document_tokens} tokens, {question!r}): "
                        f"longqa {text.encode()[span[0]:span[1]].decode()!r} score "
                        f"{best.score:.6g}, pipeline {ref['answer']!r} score {ref['score']:.6g}"
                        + (": same tokens, a word cut by the pipeline's window edge" if cut_word
                           else ": UNEXPLAINED"))
                differences.append(line)
                if not cut_word:
                    unexplained.append(line)
        print(f"same best span on {same} of {len(docs)} documents; worst relative score "
              f"difference where the same: {worst_score:.2e}")
        for d in differences:
            print("differs:", d)
        assert same >= 0.99 * len(docs), differences
        assert not unexplained, unexplained
        assert worst_score < 1e-3
    finally:
        proc.terminate()
        proc.wait(timeout=60)
