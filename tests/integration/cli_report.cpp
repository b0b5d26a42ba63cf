// report.html in a real browser: headless Chromium (Debian's `chromium`, which scripts/bootstrap
// installs) opens the page, runs its script, and gives back the DOM and a screenshot. The DOM
// must hold every lane of trace.json (same process and thread ids, same names, same number of
// slices), the metrics, key_averages and kernel tables, and every number it shows from
// stats.json must equal stats.json's value and read as that value.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cli_support.hpp"

using Catch::Matchers::Contains;
using trnsim_test::example;
using trnsim_test::fresh_dir;
using trnsim_test::Invocation;
using trnsim_test::read_json;
using trnsim_test::slurp;

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The browser: $TRNSIM_CHROMIUM, else the first of Debian's and others' names on the PATH.
std::string find_chromium() {
  if (const char* env = std::getenv("TRNSIM_CHROMIUM"); env != nullptr && *env != '\0') return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t from = 0;
    while (from <= dirs.size()) {
      const size_t colon = std::min(dirs.find(':', from), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(from, colon - from)) / name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
      from = colon + 1;
    }
  }
  return "";
}

// Runs headless Chromium on `page` with `mode` (--dump-dom, or --screenshot=...), each run with
// a profile of its own (two tests may run at once). Its stderr is noise and is kept aside.
Invocation chromium(const std::string& page, const std::string& mode, const std::string& scratch,
                    const std::string& tag, const std::string& window = "1600,1000") {
  const std::string browser = find_chromium();
  if (browser.empty()) {
    FAIL(
        "headless Chromium is needed for the report test and was not found: install Debian's "
        "`chromium` (scripts/bootstrap does) or set TRNSIM_CHROMIUM to a Chrome binary");
  }
  const std::string args =
      "--headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
      "--no-first-run --no-default-browser-check --disable-extensions "
      "--hide-scrollbars --user-data-dir=" +
      scratch + "/profile-" + tag + " --virtual-time-budget=20000 --window-size=" + window + " " +
      mode + " file://" + fs::absolute(page).string();
  // `timeout`: a browser that hangs fails the test instead of holding up the suite.
  return trnsim_test::trnsim(args, scratch, "timeout 180 " + browser);
}

std::string unescape(std::string s) {
  const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"},    {"&gt;", ">"},
                                                          {"&quot;", "\""}, {"&#39;", "'"},
                                                          {"&nbsp;", " "},  {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) {
      s.replace(at, std::strlen(from), to);
    }
  }
  return s;
}

// An element of the dumped DOM: its attributes and the text right after its start tag.
struct Element {
  std::map<std::string, std::string> attrs;
  std::string text;
};

// Every element whose start tag has attribute `marker` (e.g. data-metric).
std::vector<Element> elements_with(const std::string& dom, const std::string& marker) {
  std::vector<Element> out;
  const std::string needle = " " + marker + "=\"";
  for (size_t at = dom.find(needle); at != std::string::npos; at = dom.find(needle, at + 1)) {
    const size_t open = dom.rfind('<', at);
    size_t i = dom.find(' ', open);
    Element e;
    // Attributes: name="value" pairs up to the tag's end.
    while (i < dom.size() && dom[i] != '>') {
      while (i < dom.size() && dom[i] == ' ') ++i;
      if (dom[i] == '>') break;
      const size_t eq = dom.find('=', i);
      const size_t q1 = eq + 1;
      REQUIRE(dom[q1] == '"');
      const size_t q2 = dom.find('"', q1 + 1);
      e.attrs[dom.substr(i, eq - i)] = unescape(dom.substr(q1 + 1, q2 - q1 - 1));
      i = q2 + 1;
    }
    e.text = unescape(dom.substr(i + 1, dom.find('<', i + 1) - i - 1));
    out.push_back(e);
    at = i;
  }
  return out;
}

struct Lane {
  std::string name;
  size_t slices = 0;
};

// trace.json's lanes by (pid, tid): their names and how many slices each holds.
std::map<std::pair<int, int>, Lane> trace_lanes(const json& trace, size_t& slices) {
  std::map<std::pair<int, int>, Lane> lanes;
  slices = 0;
  for (const json& e : trace["traceEvents"]) {
    std::pair<int, int> key{e.value("pid", -1), e.value("tid", -1)};
    // A DMA queue's sub-lanes (tid 100 + q + 1000 k: transfers in flight together, which a
    // trace.json lane may not hold) are the queue's one lane in the page, whose canvas has no
    // such rule: their slices count in the queue's lane.
    const bool sublane = key.second >= 1100;
    if (sublane) key.second = 100 + (key.second - 100) % 1000;
    if (e["ph"] == "M" && e["name"] == "thread_name" && !sublane) {
      lanes[key].name = e["args"]["name"];
    }
    if (e["ph"] == "X") {
      ++lanes[key].slices;
      ++slices;
    }
  }
  return lanes;
}

// The first number shown in `text` (digits with thousands separators, a fraction, an exponent),
// and the size of its last digit.
bool shown_number(const std::string& text, double& value, double& last_digit) {
  size_t i = text.find_first_of("0123456789");
  if (i == std::string::npos) return false;
  const bool negative = i > 0 && text[i - 1] == '-';
  std::string digits;
  int decimals = -1;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits += c;
      if (decimals >= 0) ++decimals;
    } else if (c == ',' && decimals < 0) {
      continue;
    } else if (c == '.' && decimals < 0) {
      digits += c;
      decimals = 0;
    } else {
      break;
    }
  }
  int exponent = 0;
  if (i < text.size() && text[i] == 'e') exponent = std::stoi(text.substr(i + 1));
  value = (negative ? -1 : 1) * std::stod(digits) * std::pow(10.0, exponent);
  last_digit = std::pow(10.0, exponent - std::max(decimals, 0));
  return true;
}

// Every number in the DOM that names a stats.json value: the exact value equals stats.json's,
// and the text shown reads as it (within the rounding of its last digit). Returns the metrics.
std::set<std::string> check_metrics(const std::string& dom, const std::vector<json>& stats) {
  std::set<std::string> seen;
  const std::vector<Element> metrics = elements_with(dom, "data-metric");
  CHECK(metrics.size() > 60);
  for (const Element& m : metrics) {
    const std::string path = m.attrs.at("data-metric");
    const size_t run = std::stoul(m.attrs.at("data-run"));
    INFO("run " << run << " " << path << " = " << m.attrs.at("data-value") << " shown as '"
                << m.text << "'");
    REQUIRE(run < stats.size());
    const json::json_pointer pointer(path);
    REQUIRE(stats[run].contains(pointer));
    const json& expected = stats[run].at(pointer);
    REQUIRE(expected.is_number());
    CHECK(std::stod(m.attrs.at("data-value")) == expected.get<double>());
    double shown = 0, digit = 0;
    REQUIRE(shown_number(m.text, shown, digit));
    const double scale = std::stod(m.attrs.at("data-display-scale"));
    CHECK(std::abs(shown * scale - expected.get<double>()) <=
          0.5 * digit * scale * (1 + 1e-9) + 1e-12 * std::abs(expected.get<double>()));
    seen.insert(std::to_string(run) + path);
  }
  return seen;
}

// The page ran its script to the end, with no error.
void check_ran(const std::string& dom, size_t runs) {
  CHECK_THAT(dom, Contains("data-ready=\"1\""));
  CHECK_THAT(dom, !Contains("data-error=") && Contains(R"(<div id="error" hidden=""></div>)"));
  CHECK_THAT(dom, Contains("data-runs=\"" + std::to_string(runs) + "\""));
}

// Every lane of the run's trace.json is in the page (same ids, name and number of slices).
void check_lanes(const std::string& dom, const json& trace, size_t run) {
  size_t slices = 0;
  const auto lanes = trace_lanes(trace, slices);
  std::map<std::pair<int, int>, Element> shown;
  for (const Element& e : elements_with(dom, "data-lane")) {
    if (e.attrs.at("data-run") != std::to_string(run)) continue;
    shown[{std::stoi(e.attrs.at("data-pid")), std::stoi(e.attrs.at("data-tid"))}] = e;
  }
  CHECK(shown.size() == lanes.size());
  for (const auto& [key, lane] : lanes) {
    INFO("run " << run << " pid " << key.first << " tid " << key.second << " " << lane.name);
    REQUIRE(shown.count(key) == 1);
    CHECK(shown[key].attrs.at("data-lane") == lane.name);
    CHECK(std::stoul(shown[key].attrs.at("data-count")) == lane.slices);
  }
}

void check_screenshot(const std::string& page, const std::string& dir, const std::string& tag) {
  const std::string png = dir + "/" + tag + ".png";
  const Invocation s = chromium(page, "--screenshot=" + png, dir, tag + "-shot");
  INFO(s.err);
  REQUIRE(s.exit_code == 0);
  REQUIRE(fs::exists(png));
  CHECK(fs::file_size(png) > 30000);  // a blank 1600x1000 page is a few KiB
  CHECK(slurp(png).substr(1, 3) == "PNG");
}

// Microseconds with six decimals, as the tooltip (and trace.json) print them.
std::string fmt_us(double us) {
  char text[64];
  std::snprintf(text, sizeof text, "%.6f us", us);
  return text;
}

void check_self_contained(const std::string& html) {
  for (const char* fetches : {"<link", " src=", "url(", "@import", "fetch(", "XMLHttpRequest"}) {
    INFO(fetches);
    CHECK(html.find(fetches) == std::string::npos);
  }
}

}  // namespace

TEST_CASE(
    "report.html in headless Chromium shows every lane, the tables and stats.json's numbers") {
  const trnsim_test::Run run =
      trnsim_test::run_ok(example("rmsnorm.json"), "--timing-only", "report_rmsnorm");
  const std::string& dir = run.dir;
  CHECK_THAT(run.invocation.out, Contains("report.html"));
  const std::string page = run.out + "/report.html";
  REQUIRE(fs::exists(page));
  check_self_contained(slurp(page));
  const json& stats = run.stats;
  const json& trace = run.trace;

  const Invocation dom = chromium(page, "--dump-dom", dir, "dom");
  INFO(dom.err.substr(0, 2000));
  REQUIRE(dom.exit_code == 0);
  check_ran(dom.out, 1);
  size_t slices = 0;
  trace_lanes(trace, slices);
  CHECK_THAT(dom.out, Contains("data-events=\"" + std::to_string(slices) + "\""));
  check_lanes(dom.out, trace, 0);
  for (const char* table :
       {"id=\"metrics\"", "data-table=\"key_averages\"", "data-table=\"kernels\"",
        "data-table=\"dma_queues\"", "id=\"utilization-chart\""}) {
    CHECK_THAT(dom.out, Contains(table));
  }
  const std::set<std::string> seen = check_metrics(dom.out, {stats});
  for (const char* key :
       {"total_time", "neuroncore_cycle_count", "hfu_estimated_percent", "mfu_estimated_percent",
        "mbu_estimated_percent", "scalar_engine_active_time", "scalar_engine_active_time_percent",
        "vector_engine_instruction_count", "dma_transfer_count", "dma_active_time",
        "hbm_read_bytes", "sbuf_write_bytes", "psum_read_bytes"}) {
    CHECK(seen.count(std::string("0/summary/") + key) == 1);
  }
  CHECK(seen.count("0/kernels/0/duration") == 1);
  check_screenshot(page, dir, "report");
}

// Item 9 of issue 18: a laptop's 1366-pixel-wide window shows the whole width of the page, with
// no horizontal scroll bar, for kernel runs and graph runs (whose tables of choices are widest).
TEST_CASE("report.html fits a 1366-pixel-wide window without horizontal scrolling") {
  for (const char* name : {"rmsnorm.json", "rmsnorm_compiled.json", "gelu_mlp_compiled.json",
                           "attention.json", "mlp_gelu.json"}) {
    INFO(name);
    const std::string tag = std::string("report_1366_") + name;
    const trnsim_test::Run run = trnsim_test::run_ok(example(name), "--timing-only", tag);
    const std::string page = run.dir + "/out/report.html";
    const Invocation dom = chromium(page, "--dump-dom", run.dir, "dom", "1366,768");
    INFO(dom.err.substr(0, 2000));
    REQUIRE(dom.exit_code == 0);
    check_ran(dom.out, 1);
    const std::vector<Element> body = elements_with(dom.out, "data-scroll-width");
    REQUIRE(body.size() == 1);
    const int scroll = std::stoi(body[0].attrs.at("data-scroll-width"));
    const int client = std::stoi(body[0].attrs.at("data-client-width"));
    // The run's directory by its name (the page is in it), not the absolute path given.
    CHECK(dom.out.find(run.out) == std::string::npos);
    CHECK_THAT(dom.out, Contains("events (out)"));
    CHECK(client > 1300);  // the window asked for, less a scroll bar at most
    CHECK(scroll <= client);
    // The legend names the host's items only for a run with host lanes.
    bool host = false;
    for (const json& e : run.trace["traceEvents"]) host = host || e.value("pid", -1) == 0;
    CHECK((dom.out.find(R"(data-legend="framework dispatch")") != std::string::npos) == host);
    CHECK(dom.out.find(R"(data-legend="DMA transfer")") != std::string::npos);
    // A lane's label counts what the lane is of: instructions (not their waits), transfers.
    std::map<std::pair<int, int>, size_t> items;
    for (const json& e : run.trace["traceEvents"]) {
      if (e["ph"] != "X" || e["cat"] == "semaphore" || e["cat"] == "port" || e["cat"] == "pipeline")
        continue;
      int tid = e["tid"];
      if (tid >= 1100) tid = 100 + (tid - 100) % 1000;  // a queue's sub-lanes: its one lane here
      ++items[{e["pid"], tid}];
    }
    for (const Element& lane : elements_with(dom.out, "data-lane")) {
      const std::pair<int, int> key{std::stoi(lane.attrs.at("data-pid")),
                                    std::stoi(lane.attrs.at("data-tid"))};
      INFO(lane.attrs.at("data-lane"));
      CHECK(std::stoul(lane.attrs.at("data-items")) == items[key]);
    }
    const std::string png = run.dir + "/report-1366.png";
    const Invocation shot = chromium(page, "--screenshot=" + png, run.dir, "shot", "1366,768");
    REQUIRE(shot.exit_code == 0);
    CHECK(fs::file_size(png) > 20000);
  }
}

TEST_CASE("report.html of two NeuronCores has each core's lanes as trace.json names them") {
  const trnsim_test::Run run = trnsim_test::run_ok(example("micro/contention_two_cores.json"),
                                                   "--timing-only", "report_two_cores");
  const std::string& dir = run.dir;
  const json& trace = run.trace;
  const Invocation dom = chromium(dir + "/out/report.html", "--dump-dom", dir, "dom");
  INFO(dom.err.substr(0, 2000));
  REQUIRE(dom.exit_code == 0);
  check_ran(dom.out, 1);
  check_lanes(dom.out, trace, 0);
  check_metrics(dom.out, {read_json(dir + "/out/stats.json")});
  CHECK_THAT(dom.out, Contains("data-pid=\"2\""));  // core 1's process
}

// What a person does with the timeline, done by the page itself (report.html#selftest): hover
// the first instruction of the first lane that has one, and ctrl+wheel to zoom in there.
TEST_CASE("report.html: hovering an instruction shows trace.json's details, ctrl+wheel zooms in") {
  const trnsim_test::Run run =
      trnsim_test::run_ok(example("rmsnorm.json"), "--timing-only", "report_hover");
  const std::string& dir = run.dir;
  const json& trace = run.trace;
  const Invocation dom = chromium(dir + "/out/report.html#selftest", "--dump-dom", dir, "dom");
  INFO(dom.err.substr(0, 2000));
  REQUIRE(dom.exit_code == 0);
  check_ran(dom.out, 1);
  const std::vector<Element> body = elements_with(dom.out, "data-selftest-tooltip");
  REQUIRE(body.size() == 1);
  const auto& a = body[0].attrs;
  const std::string tooltip = a.at("data-selftest-tooltip");
  INFO(tooltip);
  // The slice hovered, in trace.json: same lane, same start, an instruction. The page keeps
  // picoseconds; trace.json writes slices on whole nanoseconds (each end rounded, as Perfetto
  // stores them), so its start is the page's rounded.
  const int64_t start_ps = std::llround(std::stod(a.at("data-selftest-start-ps")));
  const int64_t start_ns = (start_ps + 500) / 1000;
  const json* slice = nullptr;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e.value("cat", "") == "instruction" &&
        e["pid"] == std::stoi(a.at("data-selftest-pid")) &&
        e["tid"] == std::stoi(a.at("data-selftest-tid")) &&
        std::llround(e["ts"].get<double>() * 1e3) == start_ns) {
      slice = &e;
    }
  }
  REQUIRE(slice != nullptr);
  const json& args = (*slice)["args"];
  const auto grouped = [](uint64_t v) {
    std::string d = std::to_string(v), out;
    for (size_t i = 0; i < d.size(); ++i) {
      if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
      out += d[i];
    }
    return out;
  };
  CHECK_THAT(tooltip, Contains(args["label"].get<std::string>() +
                               "; opcode: " + args["opcode"].get<std::string>() + " (" +
                               (*slice)["name"].get<std::string>() + ")"));
  CHECK_THAT(tooltip, Contains("cycles: " + grouped(args["cycles"].get<uint64_t>())));
  CHECK_THAT(tooltip, Contains("FLOPs: " + grouped(args["flops"].get<uint64_t>())));
  // Start and duration as the page has them, and trace.json's the same to its nanosecond.
  CHECK_THAT(tooltip, Contains("start: " + fmt_us(static_cast<double>(start_ps) / 1e6)));
  const auto shown_after = [&](const std::string& key) {
    const size_t at = tooltip.find(key);
    REQUIRE(at != std::string::npos);
    return std::llround(std::stod(tooltip.substr(at + key.size())) * 1e6);  // ps
  };
  const int64_t duration_ps = shown_after("duration: ");
  const int64_t end_ns = (start_ps + duration_ps + 500) / 1000;
  CHECK(std::llround((*slice)["dur"].get<double>() * 1e3) == end_ns - start_ns);
  CHECK(std::stod(a.at("data-selftest-zoom")) > 1.2);
  // The whole run drawn: at most a rectangle per pixel column per lane.
  const long rects = std::stol(a.at("data-selftest-rects-full"));
  CHECK(rects > 50);
  CHECK(rects < 16 * 1600);
}

TEST_CASE("trnsim compare writes one report of the three RMSNorm runs on one time scale") {
  const std::string dir = fresh_dir("report_compare");
  std::vector<json> stats, traces;
  std::string dirs;
  for (const char* n : {"rmsnorm_eager", "rmsnorm_fused", "rmsnorm_compiled"}) {
    const Invocation r = trnsim_test::trnsim(
        example(std::string(n) + ".json") + " --timing-only --out " + dir + "/" + n, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    dirs += " " + dir + "/" + n;
    stats.push_back(read_json(dir + "/" + n + "/stats.json"));
    traces.push_back(read_json(dir + "/" + n + "/trace.json"));
  }
  const std::string page = dir + "/compare/report.html";
  const Invocation c = trnsim_test::trnsim("compare" + dirs + " --report " + page, dir);
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  CHECK_THAT(c.out, Contains("kernel launches") && Contains("report: " + page));
  // The byte rows in MiB, the unit of the summary and of the page (issue 18 item 9).
  CHECK_THAT(c.out, Contains("HBM read") && Contains(" MiB") && !Contains(" MB"));
  REQUIRE(fs::exists(page));
  check_self_contained(slurp(page));
  // --json prints the same JSON as before; --no-report writes nothing and prints no report line.
  const Invocation j = trnsim_test::trnsim("compare --json --no-report" + dirs, dir);
  REQUIRE(j.exit_code == 0);
  CHECK(json::parse(j.out)["runs"].size() == 3);
  CHECK_THAT(trnsim_test::trnsim("compare --no-report" + dirs, dir).out, !Contains("report:"));

  const Invocation dom = chromium(page, "--dump-dom", dir, "dom");
  INFO(dom.err.substr(0, 2000));
  REQUIRE(dom.exit_code == 0);
  check_ran(dom.out, 3);
  for (size_t run = 0; run < 3; ++run) check_lanes(dom.out, traces[run], run);
  const std::set<std::string> seen = check_metrics(dom.out, stats);
  for (size_t run = 0; run < 3; ++run) {
    INFO("run " << run);
    CHECK(seen.count(std::to_string(run) + "/summary/total_time") == 1);
    CHECK(seen.count(std::to_string(run) + "/host/device_time") == 1);
    CHECK(seen.count(std::to_string(run) + "/key_averages/0/device_time_total") == 1);
    CHECK(seen.count(std::to_string(run) + "/summary/scalar_engine_active_time_percent") == 1);
  }
  // The slowest run (eager) sets the time scale; the others are drawn on it, shorter.
  CHECK(stats[0]["summary"]["total_time"].get<double>() >
        2 * stats[2]["summary"]["total_time"].get<double>());
  check_screenshot(page, dir, "compare");
}

TEST_CASE("trnsim compare names a run without report.html, and --no-report runs write none") {
  const std::string dir = fresh_dir("report_missing");
  const Invocation a = trnsim_test::trnsim(
      example("rmsnorm_fused.json") + " --timing-only --no-report --out " + dir + "/a", dir);
  REQUIRE(a.exit_code == 0);
  CHECK_FALSE(fs::exists(dir + "/a/report.html"));
  CHECK_THAT(a.out, !Contains("report.html"));
  const Invocation b = trnsim_test::trnsim(
      example("rmsnorm_compiled.json") + " --timing-only --out " + dir + "/b", dir);
  REQUIRE(b.exit_code == 0);
  const Invocation c = trnsim_test::trnsim(
      "compare " + dir + "/b " + dir + "/a --report " + dir + "/c/report.html", dir);
  CHECK(c.exit_code == 2);
  CHECK(c.out.empty());
  CHECK_THAT(c.err, Contains(dir + "/a: no report.html") && Contains("--no-report"));
  CHECK_FALSE(fs::exists(dir + "/c/report.html"));
  // A comparison report is not a run.
  REQUIRE(trnsim_test::trnsim(
              "compare " + dir + "/b " + dir + "/b --report " + dir + "/c/report.html", dir)
              .exit_code == 0);
  fs::create_directories(dir + "/d");
  fs::copy_file(dir + "/c/report.html", dir + "/d/report.html");
  fs::copy_file(dir + "/b/stats.json", dir + "/d/stats.json");
  const Invocation d =
      trnsim_test::trnsim("compare " + dir + "/b " + dir + "/d --report " + dir + "/e.html", dir);
  CHECK(d.exit_code == 2);
  CHECK_THAT(d.err, Contains("a comparison report"));
  // A page the run did not write whole (no events block) is refused, not half copied.
  std::string cut = slurp(dir + "/b/report.html");
  cut = cut.substr(0, cut.find("<script type=\"application/octet-stream\""));
  trnsim_test::write_file(dir + "/d", "report.html", cut);
  const Invocation e =
      trnsim_test::trnsim("compare " + dir + "/b " + dir + "/d --report " + dir + "/e.html", dir);
  CHECK(e.exit_code == 2);
  CHECK_THAT(e.err, Contains(dir + "/d/report.html"));
  CHECK_FALSE(fs::exists(dir + "/e.html"));
}
