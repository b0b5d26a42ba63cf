// The trnsim command line (contract in docs/cli.md and the design brief).
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <cstring>
#include <systemc>
#include <vector>

#include "sim/run.hpp"

// Debian's libsystemc.so provides a main() that prints the SystemC banner and calls sc_main();
// this one silences the banner first (the output is trnsim's) and then does the same.
int main(int argc, char* argv[]) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}

int sc_main(int argc, char* argv[]) {
  auto logger = spdlog::stderr_color_mt("trnsim");
  logger->set_pattern("trnsim: %^%l%$: %v");
  spdlog::set_default_logger(logger);

  // `trnsim run WORKLOAD ...` is the same as `trnsim WORKLOAD ...`.
  std::vector<char*> args(argv, argv + argc);
  if (args.size() > 1 && std::strcmp(args[1], "run") == 0) args.erase(args.begin() + 1);

  trnsim::sim::RunOptions o;
  CLI::App app{"trnsim: a cycle-approximate simulator of an AWS Trainium NeuronCore", "trnsim"};
  app.set_version_flag("--version", "trnsim 0.1.0");
  app.add_option("workload", o.workload, "workload JSON file (see docs/workload-format.md)")
      ->required();
  app.add_option("--arch", o.arch, "hardware preset: trn1 or trn2")->capture_default_str();
  app.add_option("--out", o.out, "directory for stats.json and trace.json")->capture_default_str();
  app.add_flag("--timing-only", o.timing_only,
               "skip tensor data and the functional check; same cycle counts");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "log what the simulator does");
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    spdlog::error("{}", e.what());
    std::fprintf(stderr,
                 "usage: trnsim WORKLOAD.json [--arch trn1|trn2] [--out DIR] "
                 "[--timing-only]   (trnsim --help for more)\n");
    return trnsim::sim::kBadInput;
  }
  spdlog::set_level(verbose ? spdlog::level::debug : spdlog::level::warn);
  return trnsim::sim::run(o);
}
