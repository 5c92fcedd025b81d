// Latencies as Prometheus histograms (runtime/server/histogram.hpp) and their /metrics series.
#include <catch2/catch.hpp>

#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "runtime/server/histogram.hpp"
#include "runtime/server/metrics.hpp"

using namespace anchorage;

namespace {

// The value of the series line that starts with `series` followed by a space; -1 when absent.
double value_of(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  return -1;
}

ledger_entry finished(cache_source source, double ttft_ms, double total_ms, double queue_ms) {
  ledger_entry e;
  e.route = request_kind::chat;
  e.source = source;
  e.ttft_ms = ttft_ms;
  e.total_ms = total_ms;
  e.queue_ms = queue_ms;
  return e;
}

}  // namespace

TEST_CASE("a histogram counts each observation in the first bucket whose bound holds it, cumulatively",
          "[metrics][histogram]") {
  histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 1.0, 3.0, 11.0, 1e9}) h.observe(v);
  CHECK(h.count() == 7);
  CHECK(h.sum() == Approx(0.05 + 0.1 + 0.5 + 1.0 + 3.0 + 11.0 + 1e9));
  CHECK(h.at_or_below(0) == 2);  // 0.05 and 0.1: a bound is inclusive
  CHECK(h.at_or_below(1) == 4);
  CHECK(h.at_or_below(2) == 5);

  std::ostringstream o;
  h.write(o, "x_seconds", "source=\"disk\"");
  const std::string t = o.str();
  CHECK(value_of(t, "x_seconds_bucket{source=\"disk\",le=\"0.1\"}") == 2);
  CHECK(value_of(t, "x_seconds_bucket{source=\"disk\",le=\"1\"}") == 4);
  CHECK(value_of(t, "x_seconds_bucket{source=\"disk\",le=\"10\"}") == 5);
  CHECK(value_of(t, "x_seconds_bucket{source=\"disk\",le=\"+Inf\"}") == 7);
  CHECK(value_of(t, "x_seconds_count{source=\"disk\"}") == 7);

  std::ostringstream bare;
  histogram({1}).write(bare, "y");
  CHECK(bare.str() == "y_bucket{le=\"1\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n");
}

TEST_CASE("a histogram's bounds must be finite and ascend", "[metrics][histogram]") {
  CHECK_THROWS_AS(histogram({1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(histogram({2, 1}), std::invalid_argument);
  CHECK_THROWS_AS(histogram({1, std::numeric_limits<double>::infinity()}), std::invalid_argument);
  const auto& b = histogram::latency_bounds();
  CHECK(b.front() == 0.005);
  CHECK(b.back() == 600);
}

TEST_CASE(
    "/metrics gives time to first token, request time and queue wait as histograms, TTFT also by source",
    "[metrics][histogram]") {
  metrics m;
  m.on_finished(finished(cache_source::cold, 4000, 9000, 3));  // 4 s, 9 s, 3 ms
  m.on_finished(finished(cache_source::end, 120, 800, 40));    // 0.12 s, 0.8 s, 40 ms
  m.on_finished(finished(cache_source::end, 300, 2000, 0));    // 0.3 s, 2 s, 0
  const std::string t = m.text(0, 0);
  CHECK(t.find("# TYPE anchorage_ttft_seconds histogram") != std::string::npos);
  CHECK(t.find("# TYPE anchorage_request_seconds histogram") != std::string::npos);
  CHECK(t.find("# TYPE anchorage_queue_wait_seconds histogram") != std::string::npos);
  CHECK(t.find("# TYPE anchorage_source_ttft_seconds histogram") != std::string::npos);

  CHECK(value_of(t, "anchorage_ttft_seconds_count") == 3);
  CHECK(value_of(t, "anchorage_ttft_seconds_sum") == Approx(4.42));
  CHECK(value_of(t, "anchorage_ttft_seconds_bucket{le=\"0.25\"}") == 1);
  CHECK(value_of(t, "anchorage_ttft_seconds_bucket{le=\"0.5\"}") == 2);
  CHECK(value_of(t, "anchorage_ttft_seconds_bucket{le=\"5\"}") == 3);
  CHECK(value_of(t, "anchorage_request_seconds_bucket{le=\"1\"}") == 1);
  CHECK(value_of(t, "anchorage_request_seconds_bucket{le=\"2.5\"}") == 2);
  CHECK(value_of(t, "anchorage_request_seconds_bucket{le=\"10\"}") == 3);
  CHECK(value_of(t, "anchorage_queue_wait_seconds_bucket{le=\"0.005\"}") == 2);
  CHECK(value_of(t, "anchorage_queue_wait_seconds_bucket{le=\"0.05\"}") == 3);
  CHECK(value_of(t, "anchorage_queue_wait_seconds_count") == 3);

  CHECK(value_of(t, "anchorage_source_ttft_seconds_count{source=\"end\"}") == 2);
  CHECK(value_of(t, "anchorage_source_ttft_seconds_bucket{source=\"end\",le=\"0.1\"}") == 0);
  CHECK(value_of(t, "anchorage_source_ttft_seconds_bucket{source=\"end\",le=\"0.25\"}") == 1);
  CHECK(value_of(t, "anchorage_source_ttft_seconds_bucket{source=\"cold\",le=\"2.5\"}") == 0);
  CHECK(value_of(t, "anchorage_source_ttft_seconds_bucket{source=\"cold\",le=\"5\"}") == 1);
  CHECK(value_of(t, "anchorage_source_ttft_seconds_count{source=\"disk\"}") == -1);  // none served
}
