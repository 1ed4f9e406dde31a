#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sy::bench {

// Nearest-rank percentile (q in 0..1) of samples; T() without samples.
template <typename T>
T nearestRank(std::vector<T> v, double q)
{
    if (v.empty())
        return T();
    std::sort(v.begin(), v.end());
    size_t rank = size_t(q * double(v.size()) + 0.999999);
    rank = std::clamp<size_t>(rank, 1, v.size());
    return v[rank - 1];
}

// The same for microsecond samples, in milliseconds.
inline double percentileMs(std::vector<int64_t> v, double q)
{
    return double(nearestRank(std::move(v), q)) / 1000.0;
}

} // namespace sy::bench
