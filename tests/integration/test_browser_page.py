"""The browser page (GET / of the HTTP API; server/web/index.html) in a real headless Chromium
driven by Selenium: it loads, asks the sample question, and the long answer it highlights and
the short answer it marks are exactly the spans the gRPC API returns for the same request
(`longqa ask --json`); the same with a document of CJK, emoji and combining marks before and
inside the answering paragraph (UTF-8 byte offsets turned into UTF-16 positions); an over-limit
document shows the server's message. Saves docs/images/http-page.png of the first answer.

Run by CTest as: .venv/bin/python -m pytest tests/integration/test_browser_page.py
"""
import json
import os
import re
import shutil
import subprocess

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

from longqa_process import BUILD, start_server

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.path.join(BUILD, "client", "longqa")
MODEL = os.path.join(SOURCE, "models", "demo")
SAMPLE = open(os.path.join(MODEL, "sample.txt"), encoding="utf-8").read()
QUESTION = json.load(open(os.path.join(MODEL, "sample_questions.json")))[0]["question"]
LIMIT = 200000  # --max_document_bytes of the test server


@pytest.fixture(scope="module")
def server():
    proc, grpc_port, _, log = start_server(MODEL, "--http_listen=127.0.0.1:0",
                                           f"--max_document_bytes={LIMIT}")
    http_port = int(re.search(r"HTTP API on port (\d+)", log).group(1))
    yield grpc_port, http_port
    proc.kill()
    proc.wait()


@pytest.fixture(scope="module")
def browser():
    chromedriver = shutil.which("chromedriver")
    assert chromedriver, "Debian's chromium-driver is missing: run deploy/install-deps.sh"
    options = webdriver.ChromeOptions()
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    yield driver
    driver.quit()


def ask_grpc(grpc_port, question, text, tmp_path):
    path = tmp_path / "doc.txt"
    path.write_text(text, encoding="utf-8")
    return json.loads(subprocess.run(
        [CLI, "ask", f"--target=127.0.0.1:{grpc_port}", "--question", question,
         f"--file={path}", "--json", "--n_best=5"],
        check=True, capture_output=True, text=True).stdout)


def ask_page(browser, http_port, question, text=None, upload=None):
    """Loads the page, puts `text` in the document box (or uploads the file `upload`, or loads
    the sample), asks, and returns (highlighted paragraph text, marked text or None)."""
    browser.get(f"http://127.0.0.1:{http_port}/")
    wait = WebDriverWait(browser, 120)
    if upload is not None:
        browser.find_element(By.ID, "file").send_keys(str(upload))
        wait.until(lambda d: d.find_element(By.ID, "text").get_property("value"))
    elif text is None:
        browser.find_element(By.ID, "sample").click()
        wait.until(lambda d: d.find_element(By.ID, "text").get_property("value"))
    else:
        # Typing 10k characters key by key is slow: set the value as a paste would.
        browser.execute_script("document.getElementById('text').value = arguments[0];", text)
    box = browser.find_element(By.ID, "question")
    box.clear()
    box.send_keys(question)
    browser.find_element(By.ID, "ask").click()
    wait.until(lambda d: not d.find_element(By.ID, "answer").get_property("hidden") or
               "error" in d.find_element(By.ID, "status").get_attribute("class"))
    longs = browser.find_elements(By.CSS_SELECTOR, "#doc p.long")
    marks = browser.find_elements(By.CSS_SELECTOR, "#doc p.long mark")
    # textContent: the exact characters (Selenium's .text normalises whitespace).
    long_text = longs[0].get_property("textContent") if longs else None
    mark_text = marks[0].get_property("textContent") if marks else None
    return long_text, mark_text


def test_the_page_shows_the_spans_the_grpc_api_returns(server, browser, tmp_path):
    grpc_port, http_port = server
    long_text, mark_text = ask_page(browser, http_port, QUESTION)
    want = ask_grpc(grpc_port, QUESTION, SAMPLE, tmp_path)
    assert want["answer_type"] == "SHORT", want
    assert mark_text == want["short_answers"][0]["text"] == "1971"
    assert long_text == want["long_answer"]["text"]
    assert browser.find_element(By.ID, "kind").text == "Short answer"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#types .bar")) == 5
    assert browser.find_elements(By.CSS_SELECTOR, "#nbest li")
    assert "ms" in browser.find_element(By.ID, "timing").text
    browser.save_screenshot(os.path.join(SOURCE, "docs", "images", "http-page.png"))


def test_multibyte_text_is_highlighted_at_the_right_characters(server, browser, tmp_path):
    grpc_port, http_port = server
    prefix = ("東京の川 🎉🎊 naïve café e\u0301t\u00e9 Zürich 👩\u200d🔬 and ﬁne print.\n\n" * 3)
    text = prefix + SAMPLE.replace("Born in Brilo in 1971",
                                   "Born in Brilo (ブリロ 🏙️, e\u0301) in 1971")
    assert "ブリロ" in text, "the sample changed: pick another answering sentence"
    upload = tmp_path / "multibyte.txt"  # through the page's .txt upload
    upload.write_text(text, encoding="utf-8")
    long_text, mark_text = ask_page(browser, http_port, QUESTION, upload=upload)
    want = ask_grpc(grpc_port, QUESTION, text, tmp_path)
    assert want["long_answer"]["text"] and "ブリロ" in want["long_answer"]["text"], want
    assert long_text == want["long_answer"]["text"]
    if want["short_answers"] and want["answer_type"] == "SHORT":
        assert mark_text == want["short_answers"][0]["text"]
    # The byte offsets really differ from the string positions here.
    begin = want["long_answer"]["byte_begin"]
    assert len(text.encode("utf-8")[:begin].decode("utf-8")) != begin


def test_a_1mb_document_renders_in_batches(server, browser):
    _, http_port = server
    text = "\n\n".join(f"Paragraph {i}: the harbour was quiet that year." for i in range(20000))
    assert len(text.encode()) > 1_000_000
    browser.get(f"http://127.0.0.1:{http_port}/")
    browser.execute_script("document.getElementById('text').value = arguments[0];", text)
    # One click renders the first batch at once and the rest a batch per frame.
    shown, total = browser.execute_script(
        "document.getElementById('show').click();"
        "return [document.getElementById('doc').children.length, paragraphs.length];")
    assert total == 20000 and 0 < shown <= 200, (shown, total)
    WebDriverWait(browser, 120).until(
        lambda d: d.execute_script("return document.getElementById('doc').children.length")
        == 20000)


def test_an_over_limit_document_shows_the_servers_message(server, browser):
    _, http_port = server
    text = ("The harbour was quiet that year. " * 40 + "\n\n") * (LIMIT // 1300 + 10)
    assert len(text.encode()) > LIMIT
    ask_page(browser, http_port, QUESTION, text)
    status = browser.find_element(By.ID, "status")
    assert "error" in status.get_attribute("class")
    assert "HTTP 413" in status.text and "RESOURCE_EXHAUSTED" in status.text, status.text
    assert str(LIMIT) in status.text, status.text
