// Suggestions for misspelled names: the nearest known name by edit distance.
#pragma once

#include <string>
#include <vector>

namespace trnsim::base {

// The known name closest to `word` (edit distance), or "" when none is close.
std::string closest_name(const std::string& word, const std::vector<std::string>& known);

}  // namespace trnsim::base
