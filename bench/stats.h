// Statistics the benchmarks share.
#ifndef TOOLEXEC_BENCH_STATS_H_
#define TOOLEXEC_BENCH_STATS_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace toolexec::bench {

// Nearest-rank percentile (q in [0, 1]) of `v`; 0 when `v` is empty.
inline double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

}  // namespace toolexec::bench

#endif  // TOOLEXEC_BENCH_STATS_H_
