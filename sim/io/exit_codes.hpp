// The process exit codes every trnsim command shares (design brief, "The command line").
#pragma once

namespace trnsim::sim {

// 0 success; 1 the simulation ran but a check failed (functional mismatch, golden drift);
// 2 bad input or usage, or a program that can deadlock.
enum ExitCode : int { kSuccess = 0, kCheckFailed = 1, kBadInput = 2 };

}  // namespace trnsim::sim
