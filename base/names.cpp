#include "base/names.hpp"

#include <algorithm>

namespace trnsim::base {

std::string closest_name(const std::string& word, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& k : known) {
    // Levenshtein distance, two rows.
    std::vector<size_t> prev(k.size() + 1), cur(k.size() + 1);
    for (size_t j = 0; j <= k.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= k.size(); ++j) {
        cur[j] = std::min(
            {prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == k[j - 1] ? 0 : 1)});
      }
      std::swap(prev, cur);
    }
    if (prev[k.size()] < best_distance) {
      best_distance = prev[k.size()];
      best = k;
    }
  }
  return best;
}

}  // namespace trnsim::base
