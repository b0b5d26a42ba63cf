#include "sim/run/nki_kernel.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "sim/io/interrupt.hpp"

extern char** environ;

namespace trnsim::sim {

bool is_python_kernel(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0;
}

namespace {

// Debian's interpreter, where CMake found it; TRNSIM_PYTHON overrides it.
std::string python_executable() {
  if (const char* p = std::getenv("TRNSIM_PYTHON"); p != nullptr && *p != '\0') return p;
#ifdef TRNSIM_PYTHON_EXECUTABLE
  return TRNSIM_PYTHON_EXECUTABLE;
#else
  return "/usr/bin/python3";
#endif
}

// Runs argv with PYTHONPATH led by the trnsim package and its module; returns the exit code.
int spawn(const std::vector<std::string>& argv) {
  std::string path;
#ifdef TRNSIM_PYTHONPATH
  path = TRNSIM_PYTHONPATH;
#endif
  if (const char* old = std::getenv("PYTHONPATH"); old != nullptr && *old != '\0') {
    path += path.empty() ? old : std::string(":") + old;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string(*e).rfind("PYTHONPATH=", 0) != 0) env_strings.emplace_back(*e);
  }
  env_strings.push_back("PYTHONPATH=" + path);
  std::vector<char*> env;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, cargs[0], nullptr, nullptr, cargs.data(), env.data()) != 0) {
    spdlog::error("cannot run {} to trace the kernel (set TRNSIM_PYTHON to Debian's python3)",
                  argv[0]);
    return kBadInput;
  }
  // Interrupted while it traces: it gets the signal too, and is waited for before its scratch
  // directory is removed.
  InterruptCleanup::add_child(pid);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  InterruptCleanup::release_child(pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : kBadInput;
}

}  // namespace

int run_nki_kernel(RunOptions o, const NkiKernelOptions& k) {
  namespace fs = std::filesystem;
  std::string tmpl = (fs::temp_directory_path() / "trnsim-nki-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    spdlog::error("cannot create a temporary directory for the traced kernel");
    return kBadInput;
  }
  const std::string dir = tmpl;
  const int cleanup = InterruptCleanup::add_directory(dir);
  // An interpreter without the package (or a build without the module) is one error line too.
  constexpr const char* kLauncher =
      "import sys\n"
      "try:\n"
      "    from trnsim.nki.cli import main\n"
      "except ImportError as e:\n"
      "    print('trnsim: error: ' + str(e).replace(chr(10), ' '), file=sys.stderr)\n"
      "    sys.exit(2)\n"
      "sys.exit(main(sys.argv[1:]))\n";
  std::vector<std::string> argv = {python_executable(),
                                   "-c",
                                   kLauncher,
                                   o.workload,
                                   "--emit",
                                   dir,
                                   "--arch",
                                   o.arch.empty() ? "trn2" : o.arch};
  if (!k.kernel.empty()) argv.insert(argv.end(), {"--kernel", k.kernel});
  for (const auto& i : k.inputs) argv.insert(argv.end(), {"--input", i});
  if (!k.grid.empty()) argv.insert(argv.end(), {"--grid", k.grid});
  if (!k.lnc.empty()) argv.insert(argv.end(), {"--lnc", k.lnc});
  for (const auto& s : o.sets) argv.insert(argv.end(), {"--set", s});
  const int traced = spawn(argv);
  int rc = traced;
  if (traced == 0) {
    // The tracer wrote one program, KERNEL.json, beside its inputs' .npy files.
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".json") o.workload = entry.path().string();
    }
    // With --lnc 2, cores/1.json ... are the programs of the logical core's other cores.
    for (uint32_t c = 1; fs::exists(fs::path(dir) / "cores" / fmt::format("{}.json", c)); ++c) {
      o.core_programs.push_back((fs::path(dir) / "cores" / fmt::format("{}.json", c)).string());
    }
    rc = run(o);
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  InterruptCleanup::release(cleanup);
  return traced == 0 ? rc : (traced == 1 ? kBadInput : traced);
}

}  // namespace trnsim::sim
