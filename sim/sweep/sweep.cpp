#include "sim/sweep/sweep.hpp"

#include <spdlog/spdlog.h>

#include <fmt/format.h>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "sim/io/exit_codes.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/output_file.hpp"
#include "sim/sweep/sweep_internal.hpp"

namespace trnsim::sim {

// The parts: sweep_spec.cpp, sweep_points.cpp, sweep_results.cpp, sweep_plot.cpp.
using namespace sweep_internal;

namespace {

namespace fs = std::filesystem;

// Removes point directories of an earlier, larger sweep (only ones a sweep made).
void remove_stale_points(const std::string& out_dir, const std::vector<Point>& points) {
  std::set<std::string> current;
  for (const Point& p : points) current.insert(p.id);
  std::error_code ec;
  const fs::path dir = fs::path(out_dir) / "points";
  if (!fs::is_directory(dir, ec)) return;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory() && !current.count(e.path().filename().string()) &&
        fs::exists(e.path() / "point.json")) {
      stale.push_back(e.path());
    }
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

}  // namespace

bool every_rank_read_its_inputs(const std::string& error, SweepComm& comm) {
  const std::vector<std::string> errors = comm.gather(error);
  int status = kSuccess;
  if (comm.rank() == 0) {
    for (size_t r = 0; r < errors.size(); ++r) {
      if (errors[r].empty()) continue;
      spdlog::error("{}{}", r > 0 ? fmt::format("rank {}: ", r) : "", errors[r]);
      status = kBadInput;
      break;
    }
  }
  return comm.broadcast(status) == kSuccess;
}

int sweep(const SweepOptions& o, SweepComm& comm) {
  const int rank = comm.rank(), ranks = comm.size();
  SweepSpec spec;
  std::vector<Point> points;
  std::string out_dir = o.out;
  bool timing_only = true;
  std::string error;
  try {
    if (o.jobs < 1 || o.jobs > kMaxJobs) {
      throw InputError(fmt::format("-j {}: expected 1 to {}", o.jobs, kMaxJobs));
    }
    spec = parse_sweep(o.file);
    if (o.full && o.timing_only) throw InputError("--full and --timing-only: expected one of them");
    timing_only = o.full ? false : o.timing_only ? true : spec.timing_only;
    points = expand(spec, timing_only);
    if (out_dir.empty()) out_dir = "trnsim-sweep/" + stem_of(o.file);
    if (rank == 0) {
      make_output_directory(out_dir + "/points");
      if (!o.resume) remove_stale_points(out_dir, points);
    }
  } catch (const InputError& e) {
    error = e.what();
  } catch (const OutputError& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = fmt::format("{}: {}", o.file, e.what());
  }
  // Every rank read the file; if any could not, none runs anything.
  if (!every_rank_read_its_inputs(error, comm)) return kBadInput;

  std::vector<size_t> mine;
  for (size_t i = 0; i < points.size(); ++i) {
    if (static_cast<int>(i % ranks) == rank) mine.push_back(i);
  }
  if (rank == 0) {
    std::fprintf(stderr, "sweep: %s: %zu points%s, -j %d, outputs in %s%s\n", spec.name.c_str(),
                 points.size(), ranks > 1 ? fmt::format(" over {} MPI ranks", ranks).c_str() : "",
                 o.jobs, out_dir.c_str(), o.resume ? " (resuming)" : "");
  }
  std::map<size_t, json> rows;
  std::string run_error;
  try {
    make_output_directory(out_dir + "/points");
    rows = run_points(spec, points, mine, o, timing_only, out_dir, rank, ranks);
  } catch (const std::exception& e) {
    run_error = e.what();
  }

  // Rank 0 gathers every rank's rows and writes the outputs.
  json mine_json = json::object();
  mine_json["error"] = run_error;
  json list = json::array();
  for (const auto& [i, row] : rows) list.push_back({{"index", i}, {"row", row}});
  mine_json["rows"] = list;
  const std::vector<std::string> all = comm.gather(mine_json.dump());
  int code = kSuccess;
  if (rank == 0) {
    try {
      std::vector<json> ordered(points.size());
      std::vector<bool> have(points.size(), false);
      for (size_t r = 0; r < all.size(); ++r) {
        const json part = json::parse(all[r]);
        if (!part["error"].get<std::string>().empty()) {
          throw OutputError(fmt::format("{}{}", r > 0 ? fmt::format("rank {}: ", r) : "",
                                        part["error"].get<std::string>()));
        }
        for (const json& e : part["rows"]) {
          const size_t i = e["index"].get<size_t>();
          ordered.at(i) = e["row"];
          have.at(i) = true;
        }
      }
      for (size_t i = 0; i < points.size(); ++i) {
        if (!have[i]) throw OutputError(fmt::format("point {} has no result", points[i].id));
      }
      add_speedups(ordered);
      size_t failed = 0;
      for (const json& r : ordered) failed += r["status"] != "ok";
      write_file(out_dir + "/results.csv", csv_text(spec, ordered));
      write_file(out_dir + "/results.json",
                 results_json(spec, timing_only, ordered).dump(2) + "\n");
      const std::string table = table_text(spec, ordered);
      write_file(out_dir + "/table.txt", table);
      const std::string plot_note = plot(spec, ordered, out_dir);
      std::cout << fmt::format("sweep {}: {} points, {} ok, {} failed; * marks the base point\n",
                               spec.name, ordered.size(), ordered.size() - failed, failed)
                << table
                << fmt::format("results: {0}/results.csv, {0}/results.json\n{1}\n", out_dir,
                               plot_note)
                << std::flush;
      code = failed ? kCheckFailed : kSuccess;
    } catch (const std::exception& e) {
      spdlog::error("{}", e.what());
      code = kBadInput;
    }
  }
  return comm.broadcast(code);
}

int launcher_ranks() {
  // OpenMPI's mpirun, MPICH/Hydra and PMI-1/2 launchers, or srun with PMIx (size: Slurm's).
  const bool pmix = std::getenv("PMIX_RANK") != nullptr;
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", pmix ? "SLURM_NTASKS" : nullptr}) {
    if (var == nullptr) continue;
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return pmix ? 2 : 1;  // under PMIx with no size known: more than one, to be safe
}

}  // namespace trnsim::sim
