// longqa bench: load against a server, bounded by duration and request count. Closed loop with
// N concurrent clients, or open loop at a fixed request rate. Prints throughput, latency
// percentiles, errors by code and the server-side time breakdown from the responses' timing;
// --csv writes one row per request.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "client/commands.h"
#include "client/connection.h"
#include "client/requests.h"

namespace longqa::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct Sample {
  double start_s, latency_s;
  int code;
  v1::Timing timing;
  uint32_t document_tokens;
};

std::string GeneratedDocument(int64_t words) {
  static const char* kWords[] = {"the",  "river", "city",   "was",  "founded", "in",
                                 "year", "by",    "people", "of",   "a",       "mountain",
                                 "near", "old",   "bridge", "north"};
  std::string text;
  for (int64_t w = 0; w < words; ++w) {
    text += kWords[(w * 7 + w / 13) % 16];
    text += (w % 60 == 59) ? ".\n\n" : (w % 12 == 11 ? ". " : " ");
  }
  return text;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  return v[i];
}

}  // namespace

int RunBench(int argc, char** argv) {
  std::set<std::string> known = ConnectionFlags();
  known.insert(
      {"concurrency", "rate", "duration_s", "requests", "file", "question", "doc_words", "csv"});
  const Args args(argc, argv, 2, known, {});
  const int concurrency = static_cast<int>(args.GetInt("concurrency", 1, 1));
  const double rate = args.GetDouble("rate", 0);
  const double duration_s = args.GetDouble("duration_s", 10);
  const int64_t max_requests = args.GetInt("requests", 0, 0);
  if (duration_s <= 0 || rate < 0) throw UsageError("--duration_s must be > 0 and --rate ≥ 0");
  std::string text;
  if (args.Has("file")) {
    text = ReadTextFileOrThrow(args.Get("file"), "--file");
  } else {
    text = GeneratedDocument(args.GetInt("doc_words", 2000, 1));
  }
  v1::AnswerRequest request;
  request.set_question(args.Get("question", "where was the bridge founded"));
  request.mutable_document()->set_text(text);
  request.mutable_options()->set_include_timing(true);

  const Connection connection(args);
  auto stub = v1::QuestionAnswering::NewStub(connection.channel());
  const auto start = Clock::now();
  const auto end = start + std::chrono::duration<double>(duration_s);
  std::atomic<int64_t> issued{0};
  std::mutex mu;
  std::vector<Sample> samples;
  auto worker = [&] {
    while (true) {
      const int64_t k = issued++;
      if (max_requests > 0 && k >= max_requests) return;
      if (rate > 0) {  // open loop: request k is due at start + k / rate
        const auto due = start + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(k / rate));
        if (due >= end) return;
        std::this_thread::sleep_until(due);
      }
      const auto t0 = Clock::now();
      if (t0 >= end) return;
      grpc::ClientContext context;
      connection.Prepare(&context);
      v1::AnswerResponse response;
      const grpc::Status status = stub->Answer(&context, request, &response);
      const auto t1 = Clock::now();
      std::lock_guard<std::mutex> lock(mu);
      samples.push_back({std::chrono::duration<double>(t0 - start).count(),
                         std::chrono::duration<double>(t1 - t0).count(),
                         static_cast<int>(status.error_code()), response.timing(),
                         response.usage().document_tokens()});
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < concurrency; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  std::vector<double> latencies;
  std::map<int, int64_t> codes;
  double queue = 0, tokenize = 0, inference = 0, decode = 0, batch = 0, tokens = 0;
  for (const Sample& s : samples) {
    ++codes[s.code];
    if (s.code != 0) continue;
    latencies.push_back(s.latency_s);
    queue += s.timing.queue_seconds();
    tokenize += s.timing.tokenize_seconds();
    inference += s.timing.inference_seconds();
    decode += s.timing.decode_seconds();
    batch += s.timing.batch_requests();
    tokens += s.document_tokens;
  }
  const double ok = static_cast<double>(latencies.size());
  std::printf("bench: %zu requests in %.2f s, concurrency %d%s\n", samples.size(), elapsed,
              concurrency, rate > 0 ? (", rate " + std::to_string(rate) + "/s").c_str() : "");
  std::printf("throughput: %.2f req/s, %.0f document tokens/s\n", ok / elapsed, tokens / elapsed);
  std::printf("latency ms: p50 %.1f  p90 %.1f  p99 %.1f\n", 1e3 * Percentile(latencies, 0.5),
              1e3 * Percentile(latencies, 0.9), 1e3 * Percentile(latencies, 0.99));
  if (ok > 0) {
    std::printf(
        "server ms (mean): queue %.1f  tokenize %.1f  inference %.1f  decode %.2f  "
        "batch size %.2f\n",
        1e3 * queue / ok, 1e3 * tokenize / ok, 1e3 * inference / ok, 1e3 * decode / ok, batch / ok);
  }
  for (const auto& [code, count] : codes) {
    std::printf("  code %d: %lld\n", code, static_cast<long long>(count));
  }
  if (args.Has("csv")) {
    std::ofstream csv(args.Get("csv"));
    if (!csv) throw UsageError("cannot write --csv " + args.Get("csv"));
    csv << "start_s,latency_s,code,queue_s,tokenize_s,inference_s,decode_s,batch_requests\n";
    for (const Sample& s : samples) {
      csv << s.start_s << ',' << s.latency_s << ',' << s.code << ',' << s.timing.queue_seconds()
          << ',' << s.timing.tokenize_seconds() << ',' << s.timing.inference_seconds() << ','
          << s.timing.decode_seconds() << ',' << s.timing.batch_requests() << '\n';
    }
  }
  if (ok == static_cast<double>(samples.size())) return kExitOk;
  return codes.count(static_cast<int>(grpc::StatusCode::UNAVAILABLE)) && ok == 0 ? kExitConnection
                                                                                 : kExitServer;
}

}  // namespace longqa::cli
