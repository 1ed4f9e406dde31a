#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sy::bench {

// Nearest-rank percentile (q in 0..1) of microsecond samples, in milliseconds; 0 without samples.
inline double percentileMs(std::vector<int64_t> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    size_t rank = size_t(q * double(v.size()) + 0.999999);
    rank = std::clamp<size_t>(rank, 1, v.size());
    return double(v[rank - 1]) / 1000.0;
}

} // namespace sy::bench
