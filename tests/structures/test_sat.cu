// Summed-area tables: every image/table type pair and channel count against 64-bit / double
// references, box queries against brute-force sums, wrap-around exactness of u32 tables, the float
// error bound, both CUDA algorithms against the host backend, and argument errors.
#include "common/backends.hpp"

#include <canopy/core/for_each.hpp>
#include <canopy/structures/detail/sat_functors.cuh>
#include <canopy/structures/sat.hpp>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

using canopy_test::BackendTest;

namespace {

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return "u8";
  else if constexpr (std::is_same_v<T, std::uint16_t>) return "u16";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "u32";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "u64";
  else if constexpr (std::is_same_v<T, float>) return "f32";
  else return "f64";
}

enum class distribution { uniform_full, all_max, checker_extremes, large_offset };

template <class In>
std::vector<In> make_image(int w, int h, int c, distribution d, std::uint64_t seed) {
  std::vector<In> img(std::size_t(w) * h * c);
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i < img.size(); ++i) {
    const std::size_t pixel = i / std::size_t(c);
    const bool odd = ((pixel % std::size_t(w)) + pixel / std::size_t(w)) & 1;
    if constexpr (std::is_floating_point_v<In>) {
      std::uniform_real_distribution<float> u(0.f, 1.f);
      switch (d) {
        case distribution::uniform_full: img[i] = u(rng); break;
        case distribution::all_max: img[i] = 1.f; break;
        case distribution::checker_extremes: img[i] = odd ? 1.f : -1.f; break;
        case distribution::large_offset: img[i] = 1000.f + u(rng); break;
      }
    } else {
      const In mx = std::numeric_limits<In>::max();
      switch (d) {
        case distribution::uniform_full: img[i] = In(rng()); break;
        case distribution::all_max: img[i] = mx; break;
        case distribution::checker_extremes: img[i] = odd ? mx : In(0); break;
        case distribution::large_offset: img[i] = In(mx - In(rng() % 7)); break;
      }
    }
  }
  return img;
}

// Reference: inclusive SAT by the 2D recurrence, in u64 (integers, exact) or long double over the
// offset-subtracted values (floats).
template <class In, class Table>
using ref_t = std::conditional_t<std::is_same_v<Table, double>, long double,
                                 std::conditional_t<std::is_same_v<Table, float>, double, std::uint64_t>>;

template <class In, class Table>
std::vector<ref_t<In, Table>> reference_table(const std::vector<In>& img, int w, int h, int c,
                                              const std::vector<Table>& offset) {
  using R = ref_t<In, Table>;
  std::vector<R> s(img.size());
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k) {
        const std::size_t i = (std::size_t(y) * w + x) * c + k;
        R v = R(img[i]);
        if constexpr (std::is_floating_point_v<Table>) v -= R(offset[k]);
        if (x > 0) v += s[i - c];
        if (y > 0) v += s[i - std::size_t(w) * c];
        if (x > 0 && y > 0) v -= s[i - std::size_t(w) * c - c];
        s[i] = v;
      }
  return s;
}

// Bound on the absolute error of a float table entry: every entry is a sum of at most
// width + height + 64 partial sums (row chain, column chain, in-tile scans), none larger than
// 4 * max |S_ref|, each addition adding at most eps times its result.
template <class Table>
long double entry_bound(int w, int h, long double max_abs_entry) {
  return (long double)std::numeric_limits<Table>::epsilon() * (w + h + 64) * 4 * std::max<long double>(max_abs_entry, 1);
}

// Expects `got` to be the exact u32 table of the u8 image `img` (w x h x c), naming the first
// mismatching entries after `what`.
void expect_exact_u32(const std::vector<std::uint32_t>& got, const std::vector<std::uint8_t>& img, int w, int h, int c,
                      const std::string& what) {
  const auto ref = reference_table<std::uint8_t, std::uint32_t>(img, w, h, c, {});
  ASSERT_EQ(got.size(), ref.size()) << what;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (got[i] != std::uint32_t(ref[i]) && bad++ < 3) ADD_FAILURE() << what << " entry " << i;
  EXPECT_EQ(bad, 0u) << what;
}

// Entries of a float table (w x h x c, built with `offset`) outside entry_bound of the reference.
std::size_t float_entries_outside_bound(const std::vector<float>& table, const std::vector<float>& img, int w, int h, int c,
                                        const std::vector<float>& offset) {
  const auto ref = reference_table<float, float>(img, w, h, c, offset);
  long double max_abs = 0;
  for (auto v : ref) max_abs = std::max(max_abs, (long double)std::fabs(v));
  const long double bound = entry_bound<float>(w, h, max_abs);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < ref.size(); ++i)
    if (!(std::fabs((long double)table[i] - (long double)ref[i]) <= bound) && bad++ < 3)
      ADD_FAILURE() << "entry " << i << ": " << table[i] << " vs " << double(ref[i]);
  return bad;
}

//! Sets a test hook for its lifetime and puts the old value back.
template <class T>
struct scoped_hook {
  std::atomic<T>& hook;
  T old;
  scoped_hook(std::atomic<T>& h, T value) : hook(h), old(h.load()) { hook = value; }
  ~scoped_hook() { hook = old; }
};

struct box {
  int x0, y0, x1, y1;
};

std::vector<box> random_boxes(int w, int h, int count, std::uint64_t seed) {
  std::mt19937 rng{unsigned(seed)};
  std::vector<box> boxes = {{0, 0, w - 1, h - 1}, {0, 0, 0, 0}, {w - 1, h - 1, w - 1, h - 1},
                            {-5, -3, w + 4, h + 9}, {w / 2, h / 2, w / 2 - 1, h / 2}};  // last: empty
  for (int i = 0; i < count; ++i) {
    std::uniform_int_distribution<int> ux(-3, w + 2), uy(-3, h + 2), ext(0, 150);
    const int x0 = ux(rng), y0 = uy(rng);
    boxes.push_back({x0, y0, x0 + ext(rng), y0 + ext(rng)});
  }
  return boxes;
}

template <class In, class Table>
std::string label(int w, int h, int c, canopy::sat_algorithm a, distribution d) {
  return std::string(type_name<In>()) + "->" + type_name<Table>() + " " + std::to_string(w) + "x" +
         std::to_string(h) + "x" + std::to_string(c) + " " + canopy::to_string(a) + " dist " +
         std::to_string(int(d));
}

// Builds on ctx, checks entries and box sums; returns the table read back.
template <class In, class Table>
std::vector<Table> check_case(canopy::context& ctx, int w, int h, int c, canopy::sat_algorithm a, distribution d,
                              std::uint64_t seed, int box_count = 40) {
  SCOPED_TRACE((label<In, Table>(w, h, c, a, d)));
  const std::vector<In> img = make_image<In>(w, h, c, d, seed);
  canopy::buffer<In> image(ctx, img.size());
  image.assign(img);
  canopy::summed_area_table<Table> sat(ctx);
  canopy::sat_options opt;
  opt.algorithm = a;
  sat.template build<In>(image.view(), w, h, c, opt);
  std::vector<Table> table(sat.table().size()), offset(sat.offset().size());
  canopy::copy(ctx, sat.table(), canopy::host_span(table.data(), table.size()));
  canopy::copy(ctx, sat.offset(), canopy::host_span(offset.data(), offset.size()));
  ctx.synchronize();
  EXPECT_EQ(table.size(), img.size());
  if (img.empty()) return table;

  const auto ref = reference_table<In, Table>(img, w, h, c, offset);
  long double max_abs = 0, max_err = 0;
  std::size_t bad = 0;
  if constexpr (std::is_floating_point_v<Table>) {
    for (auto v : ref) max_abs = std::max(max_abs, (long double)std::fabs(v));
    const long double bound = entry_bound<Table>(w, h, max_abs);
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const long double e = std::fabs((long double)table[i] - (long double)ref[i]);
      max_err = std::max(max_err, e);
      if (!(e <= bound) && bad++ < 5) ADD_FAILURE() << "entry " << i << ": " << table[i] << " vs " << (double)ref[i];
    }
  } else {
    for (std::size_t i = 0; i < ref.size(); ++i)
      if (table[i] != Table(ref[i]) && bad++ < 5)
        ADD_FAILURE() << "entry " << i << ": " << table[i] << " vs " << Table(ref[i]) << " (mod 2^" << 8 * sizeof(Table) << ")";
  }
  EXPECT_EQ(bad, 0u);

  // Box sums through the public view (read on the host copy) against brute-force sums.
  canopy::sat_view<Table> v;
  v.table = table.data();
  v.offset = offset.empty() ? nullptr : offset.data();
  v.width = w;
  v.height = h;
  v.channels = c;
  for (const box& b : random_boxes(w, h, box_count, seed ^ 0x5eed)) {
    const int x0 = std::max(b.x0, 0), y0 = std::max(b.y0, 0), x1 = std::min(b.x1, w - 1), y1 = std::min(b.y1, h - 1);
    for (int k = 0; k < c; ++k) {
      long double exact_f = 0;
      std::uint64_t exact_i = 0;
      for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) {
          const In p = img[(std::size_t(y) * w + x) * c + k];
          exact_f += (long double)p;
          if constexpr (!std::is_floating_point_v<In>) exact_i += std::uint64_t(p);
        }
      const Table got = v.box_sum(b.x0, b.y0, b.x1, b.y1, k);
      if constexpr (std::is_floating_point_v<Table>) {
        // Four entries, each within the entry bound, plus the offset term.
        const long double bound = 4 * entry_bound<Table>(w, h, max_abs) +
                                  std::fabs(exact_f) * 4 * std::numeric_limits<Table>::epsilon();
        EXPECT_LE(std::fabs((long double)got - exact_f), bound) << "box " << b.x0 << "," << b.y0 << "," << b.x1 << "," << b.y1;
      } else {
        EXPECT_EQ(got, Table(exact_i)) << "box " << b.x0 << "," << b.y0 << "," << b.x1 << "," << b.y1
                                       << " (exact modulo 2^" << 8 * sizeof(Table) << ")";
        if (exact_i < (std::uint64_t(1) << 32) || sizeof(Table) == 8) {
          EXPECT_EQ(std::uint64_t(got), exact_i) << "box sum below 2^bits must be exact";
        }
      }
      if (x0 <= x1 && y0 <= y1) {
        const double area = double(x1 - x0 + 1) * double(y1 - y0 + 1);
        EXPECT_EQ(v.box_area(b.x0, b.y0, b.x1, b.y1), std::int64_t(area));
      } else {
        EXPECT_EQ(got, Table(0));
        EXPECT_EQ(v.box_area(b.x0, b.y0, b.x1, b.y1), 0);
      }
    }
  }
  return table;
}

std::vector<canopy::sat_algorithm> algorithms(const canopy::context& ctx) {
  if (ctx.is_cuda()) return {canopy::sat_algorithm::single_pass, canopy::sat_algorithm::two_pass};
  return {canopy::sat_algorithm::automatic};
}

template <class In, class Table>
void all_shapes(canopy::context& ctx, const std::vector<std::pair<int, int>>& sizes, distribution d) {
  for (auto [w, h] : sizes)
    for (int c = 1; c <= 4; ++c)
      for (auto a : algorithms(ctx)) check_case<In, Table>(ctx, w, h, c, a, d, std::uint64_t(w) * 131 + h * 7 + c);
}

template <class F>
void every_pair(F&& f) {
  f(std::uint8_t{}, std::uint32_t{});
  f(std::uint8_t{}, std::uint64_t{});
  f(std::uint16_t{}, std::uint32_t{});
  f(std::uint16_t{}, std::uint64_t{});
  f(std::uint32_t{}, std::uint32_t{});
  f(std::uint32_t{}, std::uint64_t{});
  f(float{}, float{});
  f(float{}, double{});
}

// box_sums() and box_sum() of the same view on the context's backend (in a kernel on CUDA), for
// `boxes` (x0, y0, x1, y1 each): four values a box from each.
template <class Table>
struct box_sums_and_box_sum {
  canopy::sat_view<Table> v;
  const int* boxes;
  Table* sums;  // box_sums
  Table* each;  // box_sum channel by channel, 0 past the channels
  CANOPY_HD void operator()(std::size_t i) const {
    const int* b = boxes + 4 * i;
    Table s[4];
    v.box_sums(b[0], b[1], b[2], b[3], s);
    for (int c = 0; c < 4; ++c) {
      sums[4 * i + std::size_t(c)] = s[c];
      each[4 * i + std::size_t(c)] = c < v.channels ? v.box_sum(b[0], b[1], b[2], b[3], c) : Table(0);
    }
  }
};

using canopy_test::expect_error;

}  // namespace

class SatTest : public BackendTest {};

TEST_P(SatTest, EveryTypeAndChannelCountAtAwkwardSmallSizes) {
  const std::vector<std::pair<int, int>> sizes = {{1, 1}, {1, 1025}, {769, 1}, {2, 2}, {33, 31}, {129, 33}, {257, 65}};
  every_pair([&](auto in, auto table) { all_shapes<decltype(in), decltype(table)>(ctx(), sizes, distribution::uniform_full); });
}

TEST_P(SatTest, EveryTypeAndChannelCountAt1023x769) {
  every_pair([&](auto in, auto table) {
    using In = decltype(in);
    using Table = decltype(table);
    for (int c = 1; c <= 4; ++c)
      for (auto a : algorithms(ctx())) check_case<In, Table>(ctx(), 1023, 769, c, a, distribution::uniform_full, 77 + c, 12);
  });
}

TEST_P(SatTest, HostileDistributions) {
  for (auto d : {distribution::all_max, distribution::checker_extremes, distribution::large_offset})
    for (auto a : algorithms(ctx())) {
      check_case<std::uint8_t, std::uint32_t>(ctx(), 300, 211, 4, a, d, 5);
      check_case<std::uint16_t, std::uint32_t>(ctx(), 300, 211, 3, a, d, 6);
      check_case<std::uint32_t, std::uint32_t>(ctx(), 131, 67, 2, a, d, 7);
      check_case<std::uint32_t, std::uint64_t>(ctx(), 131, 67, 1, a, d, 8);
      check_case<float, float>(ctx(), 300, 211, 4, a, d, 9);
      check_case<float, double>(ctx(), 300, 211, 2, a, d, 10);
    }
}

TEST_P(SatTest, U32TableWrapsYetSmallBoxesStayExact) {
  // Values near 2^21: entries pass 2^32 after ~2048 pixels and wrap dozens of times; any box of at
  // most 2047 pixels still has a true sum below 2^32 and must come out exact.
  const int w = 401, h = 203;
  std::vector<std::uint32_t> img(std::size_t(w) * h);
  std::mt19937 rng(3);
  for (auto& v : img) v = (1u << 21) - 1 - (rng() & 0xffff);
  auto image = upload(img);
  canopy::summed_area_table<std::uint32_t> sat(ctx());
  sat.build<std::uint32_t>(image.view(), w, h, 1);
  std::vector<std::uint32_t> t(img.size());
  canopy::copy(ctx(), sat.table(), canopy::host_span(t.data(), t.size()));
  ctx().synchronize();
  std::uint64_t last = 0;
  for (std::size_t i = 0; i < img.size(); ++i) last += img[i];
  ASSERT_GT(last, std::uint64_t(30) << 32) << "the test must actually wrap";
  canopy::sat_view<std::uint32_t> v{t.data(), nullptr, w, h, 1};
  std::mt19937 pick(11);
  for (int i = 0; i < 400; ++i) {
    const int bw = 1 + int(pick() % 45), bh = 1 + int(pick() % 45);
    if (bw * bh > 2047) continue;
    const int x0 = int(pick() % unsigned(w - bw + 1)), y0 = int(pick() % unsigned(h - bh + 1));
    std::uint64_t exact = 0;
    for (int y = y0; y < y0 + bh; ++y)
      for (int x = x0; x < x0 + bw; ++x) exact += img[std::size_t(y) * w + x];
    ASSERT_LT(exact, std::uint64_t(1) << 32);
    EXPECT_EQ(std::uint64_t(v.box_sum(x0, y0, x0 + bw - 1, y0 + bh - 1, 0)), exact);
  }
}

TEST_P(SatTest, FloatOffsetKeepsLargeValuedImagesAccurate) {
  // 1000 + noise: without the offset, f32 entries reach ~8e8 and a small box loses all noise.
  const int w = 1023, h = 769;
  const auto img = make_image<float>(w, h, 1, distribution::large_offset, 21);
  auto image = upload(img);
  canopy::summed_area_table<float> sat(ctx());
  sat.build<float>(image.view(), w, h, 1);
  std::vector<float> t(img.size()), off(1);
  canopy::copy(ctx(), sat.table(), canopy::host_span(t.data(), t.size()));
  canopy::copy(ctx(), sat.offset(), canopy::host_span(off.data(), 1));
  ctx().synchronize();
  EXPECT_NEAR(off[0], 1000.5f, 0.1f);
  canopy::sat_view<float> v{t.data(), off.data(), w, h, 1};
  double worst = 0;
  std::mt19937 pick(5);
  for (int i = 0; i < 300; ++i) {
    const int x0 = int(pick() % unsigned(w - 8)), y0 = int(pick() % unsigned(h - 8));
    const int x1 = std::min(w - 1, x0 + int(pick() % 16)), y1 = std::min(h - 1, y0 + int(pick() % 16));
    double exact = 0;
    for (int y = y0; y <= y1; ++y)
      for (int x = x0; x <= x1; ++x) exact += img[std::size_t(y) * w + x];
    const double area = double(x1 - x0 + 1) * double(y1 - y0 + 1);
    // The noise is in [0, 1); the mean must come out to better than 1% of it.
    const double err = std::fabs(double(v.box_sum(x0, y0, x1, y1, 0)) - exact) / area;
    worst = std::max(worst, err);
    EXPECT_LT(err, 0.01) << "box " << x0 << "," << y0 << "," << x1 << "," << y1;
  }
  RecordProperty("worst_mean_error", std::to_string(worst));
}

TEST_P(SatTest, BoxFilterMatchesBruteForce) {
  const int w = 67, h = 45, c = 3;
  const auto img = make_image<std::uint8_t>(w, h, c, distribution::uniform_full, 4);
  std::vector<std::int32_t> radius(std::size_t(w) * h);
  std::mt19937 rng(8);
  for (auto& r : radius) r = int(rng() % 13) - 2;  // -2..10; negatives count as 0
  auto image = upload(img);
  auto rad = upload(radius);
  canopy::summed_area_table<std::uint32_t> sat(ctx());
  sat.build<std::uint8_t>(image.view(), w, h, c);
  canopy::buffer<float> out(ctx(), img.size());
  canopy::box_filter(ctx(), sat.view(), rad.view(), out.view());
  const auto got = out.to_host();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const int r = std::max(0, radius[std::size_t(y) * w + x]);
      for (int k = 0; k < c; ++k) {
        double s = 0;
        int n = 0;
        for (int yy = std::max(0, y - r); yy <= std::min(h - 1, y + r); ++yy)
          for (int xx = std::max(0, x - r); xx <= std::min(w - 1, x + r); ++xx, ++n) s += img[(std::size_t(yy) * w + xx) * c + k];
        ASSERT_NEAR(got[(std::size_t(y) * w + x) * c + k], s / n, 1e-3) << x << "," << y << "," << k;
      }
    }
}

TEST_P(SatTest, BoxSumsOfEveryChannelMatchBoxSum) {
  // box_sums() reads each corner's channels together (one 16-byte load on the GPU for 16-byte
  // aligned 4-channel 4-byte tables); it must give box_sum()'s values for every table type and
  // channel count, on random, clipped and empty boxes. The 4-channel tables are also read through
  // a copy one element into its buffer, which the 16-byte loads must not take as aligned.
  const int w = 37, h = 23;
  std::vector<int> flat;
  for (const box& b : random_boxes(w, h, 200, 21)) flat.insert(flat.end(), {b.x0, b.y0, b.x1, b.y1});
  auto boxes = upload(flat);
  const std::size_t n = flat.size() / 4;
  every_pair([&](auto in, auto table) {
    using In = decltype(in);
    using Table = decltype(table);
    for (int c = 1; c <= 4; ++c) {
      const auto img = make_image<In>(w, h, c, distribution::uniform_full, 31 + c);
      auto image = upload(img);
      canopy::summed_area_table<Table> sat(ctx());
      sat.template build<In>(image.view(), w, h, c);
      canopy::buffer<Table> shifted(ctx(), sat.table().size() + 1);
      canopy::copy(ctx(), sat.table(), shifted.view().subspan(1, sat.table().size()));
      for (int pass = 0; pass < (c == 4 ? 2 : 1); ++pass) {
        SCOPED_TRACE((label<In, Table>(w, h, c, canopy::sat_algorithm::automatic, distribution::uniform_full) +
                      (pass ? " (table one element into its buffer)" : "")));
        canopy::sat_view<Table> v = sat.view();
        if (pass) v.table = shifted.data() + 1;
        canopy::buffer<Table> sums(ctx(), 4 * n), each(ctx(), 4 * n);
        canopy::for_each(ctx(), n, box_sums_and_box_sum<Table>{v, boxes.data(), sums.data(), each.data()});
        const auto a = sums.to_host(), b = each.to_host();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < a.size(); ++i) {
          const bool same = std::is_floating_point_v<Table> ? std::fabs(double(a[i]) - double(b[i])) <=
                                                                   4 * std::numeric_limits<Table>::epsilon() * std::fabs(double(b[i]))
                                                             : a[i] == b[i];
          if (!same && bad++ < 5) ADD_FAILURE() << "box " << i / 4 << " channel " << i % 4 << ": " << a[i] << " vs " << b[i];
        }
        EXPECT_EQ(bad, 0u);
      }
    }
  });
}

TEST_P(SatTest, ZeroSizedImagesBuildNothing) {
  canopy::summed_area_table<std::uint32_t> sat(ctx());
  canopy::buffer<std::uint8_t> empty(ctx(), 0);
  sat.build<std::uint8_t>(empty.view(), 0, 17, 3);
  sat.build<std::uint8_t>(empty.view(), 9, 0, 1);
  EXPECT_EQ(sat.table().size(), 0u);
  canopy::summed_area_table<float> fsat(ctx());
  canopy::buffer<float> fempty(ctx(), 0);
  fsat.build<float>(fempty.view(), 0, 0, 4);
  EXPECT_EQ(fsat.table().size(), 0u);
  canopy::buffer<float> out(ctx(), 0);
  canopy::buffer<std::int32_t> r(ctx(), 0);
  canopy::box_filter(ctx(), sat.view(), r.view(), out.view());
}

TEST_P(SatTest, BadArgumentsAreNamed) {
  canopy::buffer<std::uint8_t> image(ctx(), 12);
  canopy::buffer<std::uint32_t> table(ctx(), 12);
  canopy::buffer<float> fimage(ctx(), 12), ftable(ctx(), 12), foff(ctx(), 3);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), 4, 3, 5, table.view(), {}); },
      {"canopy::build_sat", "channels"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), 5, 3, 1, table.view(), {}); },
      {"canopy::build_sat", "image"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), -4, 3, 1, table.view(), {}); },
      {"canopy::build_sat", "width"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), 4, 3, 1, table.view().first(11), {}); },
      {"canopy::build_sat", "table"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<float, float>(ctx(), fimage.view(), 4, 3, 1, ftable.view(), foff.view()); },
      {"canopy::build_sat", "offset"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), 65536, 65536, 1, table.view(), {}); },
      {"canopy::build_sat", "2^31"});
  std::vector<std::uint8_t> host(12);
  std::vector<std::uint32_t> host_table(12);
  if (is_cuda()) {
    expect_error<canopy::invalid_argument>(
        [&] {
          canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), canopy::host_span<const std::uint8_t>(host.data(), 12), 4,
                                                         3, 1, table.view(), {});
        },
        {"canopy::build_sat", "image", "host memory"});
  }
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), canopy::span<const std::uint8_t>(nullptr, 12, ctx().space()),
                                                       4, 3, 1, table.view(), {});
      },
      {"canopy::build_sat", "image", "null"});
  // In place, or partly: refused (the GPU kernels write the table while other blocks still read
  // the image). Same-typed images and tables over one buffer, shifted by 0 and by part of a row.
  canopy::buffer<std::uint32_t> shared(ctx(), 16);
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::build_sat<std::uint32_t, std::uint32_t>(ctx(), shared.view().first(12), 4, 3, 1, shared.view().first(12), {});
      },
      {"canopy::build_sat", "table", "overlaps image"});
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::build_sat<std::uint32_t, std::uint32_t>(ctx(), shared.view().first(12), 4, 3, 1,
                                                        shared.view().subspan(3, 12), {});
      },
      {"canopy::build_sat", "table", "overlaps image"});
  canopy::buffer<float> fshared(ctx(), 15);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<float, float>(ctx(), fimage.view(), 4, 3, 1, fshared.view().first(12), fshared.view().subspan(11, 1)); },
      {"canopy::build_sat", "offset", "overlaps table"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::build_sat<float, float>(ctx(), fshared.view().first(12), 4, 3, 1, ftable.view(), fshared.view().subspan(10, 1)); },
      {"canopy::build_sat", "offset", "overlaps image"});
  // Adjacent, not overlapping: built, and equal to the same build in separate memory.
  canopy::buffer<std::uint32_t> both(ctx(), 24), apart(ctx(), 12);
  std::vector<std::uint32_t> pixels(12);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = std::uint32_t(i * 7 + 1);
  canopy::copy(ctx(), canopy::host_span<const std::uint32_t>(pixels.data(), 12), both.view().first(12));
  canopy::build_sat<std::uint32_t, std::uint32_t>(ctx(), both.view().first(12), 4, 3, 1, both.view().subspan(12, 12), {});
  canopy::build_sat<std::uint32_t, std::uint32_t>(ctx(), both.view().first(12), 4, 3, 1, apart.view(), {});
  std::vector<std::uint32_t> h_both(24), h_apart(12);
  canopy::copy(ctx(), canopy::span<const std::uint32_t>(both.view()), canopy::host_span(h_both.data(), 24));
  canopy::copy(ctx(), canopy::span<const std::uint32_t>(apart.view()), canopy::host_span(h_apart.data(), 12));
  ctx().synchronize();
  EXPECT_EQ(std::vector<std::uint32_t>(h_both.begin() + 12, h_both.end()), h_apart);
  EXPECT_EQ(h_apart[11], 12u * 1 + 7u * (11u * 12u / 2)) << "the corner entry is the sum of every pixel";
  canopy::buffer<std::int32_t> radius(ctx(), 5);
  canopy::buffer<float> out(ctx(), 12);
  canopy::summed_area_table<std::uint32_t> sat(ctx());
  sat.build<std::uint8_t>(image.view(), 4, 3, 1);
  expect_error<canopy::invalid_argument>([&] { canopy::box_filter(ctx(), sat.view(), radius.view(), out.view()); },
                                         {"canopy::box_filter", "radius"});
}

CANOPY_INSTANTIATE_BACKENDS(SatTest);

// The single-pass kernel's tile order (host-side check of the mapping both CUDA modes use): every
// tile appears exactly once, diagonals in order, and everything a tile's look-backs read (the tiles
// to its left and above) comes earlier, for square, wide, tall and single-row/column grids. The
// kernel's progress (no deadlock) rests on that last property.
TEST(SatTileOrder, DiagonalOrderIsAPermutationAndLooksBackOnlyToEarlierTiles) {
  std::vector<std::pair<int, int>> grids;
  for (int x = 1; x <= 24; ++x)
    for (int y = 1; y <= 24; ++y) grids.push_back({x, y});
  for (auto g : {std::pair{30, 68}, std::pair{60, 135}, std::pair{135, 60}, std::pair{1, 4096}, std::pair{4096, 1},
                 std::pair{64, 256}, std::pair{257, 3}})
    grids.push_back(g);
  for (auto [tx, ty] : grids) {
    SCOPED_TRACE(std::to_string(tx) + " x " + std::to_string(ty) + " tiles");
    std::vector<long long> order(std::size_t(tx) * std::size_t(ty), -1);
    int prev_d = 0, prev_ti = -1;
    for (unsigned n = 0; n < unsigned(tx * ty); ++n) {
      const auto p = canopy::detail::sat::diagonal_tile(n, tx, ty);
      ASSERT_TRUE(p.ti >= 0 && p.ti < ty && p.tj >= 0 && p.tj < tx) << n;
      const int d = p.ti + p.tj;
      ASSERT_TRUE(d > prev_d || (d == prev_d && p.ti > prev_ti)) << n;
      prev_d = d;
      prev_ti = p.ti;
      long long& slot = order[std::size_t(p.ti) * tx + p.tj];
      ASSERT_EQ(slot, -1) << "tile visited twice at " << n;
      slot = n;
    }
    for (int ti = 0; ti < ty; ++ti)
      for (int tj = 0; tj < tx; ++tj) {
        const long long o = order[std::size_t(ti) * tx + tj];
        if (tj > 0) ASSERT_LT(order[std::size_t(ti) * tx + tj - 1], o);
        if (ti > 0) ASSERT_LT(order[std::size_t(ti - 1) * tx + tj], o);
      }
  }
}

// ---------------------------------------------------------------------------------------------
// GPU-only: large images, and the CUDA algorithms against the host backend.

class CudaSat : public canopy_test::CudaTest {};

TEST_F(CudaSat, BothAlgorithmsMatchTheHostBackend) {
  every_pair([&](auto in, auto table_tag) {
    using In = decltype(in);
    using Table = decltype(table_tag);
    for (int c = 1; c <= 4; ++c) {
      const int w = 1023, h = 769;
      const auto img = make_image<In>(w, h, c, distribution::uniform_full, 900 + c);
      std::vector<Table> ref;
      double max_abs = 0;
      {
        canopy::context& host = canopy_test::host_context();
        canopy::buffer<In> image(host, img.size());
        image.assign(img);
        canopy::summed_area_table<Table> sat(host);
        sat.template build<In>(image.view(), w, h, c);
        ref = std::vector<Table>(sat.table().begin(), sat.table().end());
        for (Table x : ref) max_abs = std::max(max_abs, std::fabs(double(x)));
      }
      for (auto a : {canopy::sat_algorithm::single_pass, canopy::sat_algorithm::two_pass}) {
        SCOPED_TRACE((label<In, Table>(w, h, c, a, distribution::uniform_full)));
        canopy::buffer<In> image(ctx(), img.size());
        image.assign(img);
        canopy::summed_area_table<Table> sat(ctx());
        canopy::sat_options opt;
        opt.algorithm = a;
        sat.template build<In>(image.view(), w, h, c, opt);
        std::vector<Table> got(sat.table().size());
        canopy::copy(ctx(), sat.table(), canopy::host_span(got.data(), got.size()));
        ctx().synchronize();
        std::size_t bad = 0;
        for (std::size_t i = 0; i < got.size(); ++i) {
          bool ok;
          if constexpr (std::is_floating_point_v<Table>) {
            // Different summation orders: both sides are within entry_bound of the truth.
            ok = std::fabs(double(got[i]) - double(ref[i])) <=
                 2 * double(entry_bound<Table>(w, h, (long double)max_abs));
          } else {
            ok = got[i] == ref[i];
          }
          if (!ok && bad++ < 3) ADD_FAILURE() << "element " << i << ": " << got[i] << " vs host " << ref[i];
        }
        EXPECT_EQ(bad, 0u);
      }
    }
  });
}

TEST_F(CudaSat, RowsOfWhole16ByteUnitsTakeThePrefetchPath) {
  // Rows of a multiple of 16 bytes with 16 bytes per lane segment (4 pixels) go through the
  // persistent prefetching kernel (cp.async into shared memory): RGBA8, RG16, R32F, R32U; RGBA32F
  // and RGBA32U (16-byte pixels, 64 bytes a segment), and RGBA16, RG32F and RG32U (32 bytes a
  // segment), through the persistent kernel with deferred stores (where two blocks fit on an SM;
  // one tile per block otherwise), and are checked here at the same shapes. These sizes cover
  // partial tiles on the right and at the bottom, single rows and columns, and more tiles than an
  // H100 or H200 holds blocks of the persistent kernel (each block loops over tiles): 315 tiles at
  // 516 x 2000 and 594 at 1028 x 2100 (264 blocks at 2 per SM).
  const std::vector<std::pair<int, int>> sizes = {{4, 1}, {4, 97}, {132, 33}, {1028, 67}, {516, 2000}, {1028, 2100}};
  // One single-pass build of In -> Table with c channels at w x h, checked.
  const auto single_pass = [&](auto in, auto table, int w, int h, int c, std::uint64_t seed) {
    check_case<decltype(in), decltype(table)>(ctx(), w, h, c, canopy::sat_algorithm::single_pass,
                                              distribution::uniform_full, seed, 12);
  };
  auto& hooks = canopy::detail::sat::testing();
  for (auto [w, h] : sizes) {
    const std::uint64_t seed = std::uint64_t(w) * 17 + h;
    single_pass(std::uint8_t{}, std::uint32_t{}, w, h, 4, seed);
    single_pass(std::uint16_t{}, std::uint32_t{}, w, h, 2, seed + 1);
    single_pass(std::uint8_t{}, std::uint64_t{}, w, h, 4, seed + 2);
    single_pass(float{}, float{}, w, h, 1, seed + 3);
    single_pass(std::uint32_t{}, std::uint32_t{}, w, h, 1, seed + 4);
    single_pass(float{}, float{}, w, h, 4, seed + 5);
    single_pass(std::uint32_t{}, std::uint32_t{}, w, h, 4, seed + 6);
    const unsigned long long deferred_before = hooks.deferred_launches;
    single_pass(std::uint16_t{}, std::uint32_t{}, w, h, 4, seed + 7);
    single_pass(float{}, float{}, w, h, 2, seed + 8);
    single_pass(std::uint32_t{}, std::uint32_t{}, w, h, 2, seed + 9);
    // Every sm_90 device fits two blocks of the deferred-store kernel on an SM.
    if (ctx().device().compute_capability_major >= 9)
      EXPECT_EQ(hooks.deferred_launches - deferred_before, 3u) << "RGBA16, RG32F and RG32U ran the deferred-store kernel";
  }
}

TEST_F(CudaSat, RefusedCooperativeLaunchFallsBackToOneTilePerBlock) {
  // The persistent mode is launched cooperatively: all of its blocks resident at once, or refused
  // (what an MPS SM limit or co-running work cause). The test hook asks for more blocks than fit,
  // so the runtime refuses for real, and the build must fall back to one tile per block and still
  // produce the right table: RGBA8 -> u32 and R32F -> f32 (whose offsets the persistent kernel
  // would compute itself; the fallback launches the offset kernel). 1028 x 4100 has 9 x 129 = 1161
  // tiles, more blocks than any current GPU holds of this kernel (264 on an H100 or H200).
  auto& hooks = canopy::detail::sat::testing();
  const unsigned long long before = hooks.cooperative_refusals;
  scoped_hook<int> surplus(hooks.persistent_grid_surplus, 1 << 20);
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1028, 4100, 4, canopy::sat_algorithm::single_pass,
                                          distribution::uniform_full, 71, 12);
  check_case<float, float>(ctx(), 1028, 4100, 1, canopy::sat_algorithm::single_pass, distribution::uniform_full, 72,
                           12);
  // RGBA32F: the persistent kernel with deferred stores (no prefetch) where two blocks fit on an
  // SM (every sm_90 device), one tile per block otherwise.
  const unsigned long long attempts = hooks.persistent_attempts;
  check_case<float, float>(ctx(), 1028, 4100, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 74,
                           12);
  const unsigned long long rgba32f_attempted = hooks.persistent_attempts - attempts;
  if (ctx().device().compute_capability_major >= 9) EXPECT_EQ(rgba32f_attempted, 1u);
  // build_sat() (temporary scratch, flag protocol) through the same refusal.
  {
    const int w = 1028, h = 4100, c = 4;
    const auto img = make_image<std::uint8_t>(w, h, c, distribution::uniform_full, 73);
    canopy::buffer<std::uint8_t> image(ctx(), img.size());
    image.assign(img);
    canopy::buffer<std::uint32_t> table(ctx(), img.size()), none(ctx(), 0);
    canopy::sat_options opt;
    opt.algorithm = canopy::sat_algorithm::single_pass;
    canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), w, h, c, table.view(), none.view(), opt);
    const auto got = table.to_host();
    expect_exact_u32(got, img, w, h, c, "build_sat");
  }
  EXPECT_EQ(hooks.cooperative_refusals.load(), before + 3 + rgba32f_attempted)
      << "every build must have taken the refused-launch path";
  // Without the hook the same builds run persistent (no refusal) and agree.
  hooks.persistent_grid_surplus = 0;
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1028, 4100, 4, canopy::sat_algorithm::single_pass,
                                          distribution::uniform_full, 71, 12);
  const unsigned long long deferred_before = hooks.deferred_launches;
  check_case<float, float>(ctx(), 1028, 4100, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 74,
                           12);
  EXPECT_EQ(hooks.deferred_launches - deferred_before, rgba32f_attempted) << "RGBA32F ran the deferred-store kernel";
  EXPECT_EQ(hooks.cooperative_refusals.load(), before + 3 + rgba32f_attempted);
}

TEST_F(CudaSat, KeptScratchReadsNoStaleWordsAcrossBuildsLayoutsAndEpochWraps) {
  // summed_area_table keeps its look-back scratch and tags each build with a new epoch, clearing
  // at most the tile counter (only the one-tile-per-block mode reads it): words left by earlier
  // builds (other images, sizes, channel counts, so other layouts over the same bytes) must read
  // as empty. Builds through one kept scratch, each checked exactly; before some of them the epoch
  // is moved to just below the wrap, so that the wrap (a clear of the whole buffer) and the builds
  // right before and after it are exercised.
  canopy::detail::sat_kept_scratch kept(ctx());
  struct step {
    int w, h, c;
    bool near_wrap;
  };
  const step steps[] = {{1028, 67, 4, false},  {1028, 67, 4, false}, {260, 900, 1, false}, {1028, 2100, 4, false},
                        {1028, 2100, 4, true}, {1028, 2100, 4, false}, {1028, 2100, 4, false}, {33, 31, 2, false},
                        {516, 2000, 4, true},  {516, 2000, 3, false}, {1028, 2100, 4, false}};
  int index = 0;
  for (const step& st : steps) {
    SCOPED_TRACE("step " + std::to_string(index) + ": " + std::to_string(st.w) + "x" + std::to_string(st.h) + "x" +
                 std::to_string(st.c));
    const auto img = make_image<std::uint8_t>(st.w, st.h, st.c, distribution::uniform_full, 1000 + index++);
    canopy::buffer<std::uint8_t> image(ctx(), img.size());
    image.assign(img);
    canopy::buffer<std::uint32_t> table(ctx(), img.size()), none(ctx(), 0);
    if (st.near_wrap) kept.epoch = canopy::detail::kept_epoch_limit - 2;
    canopy::sat_options opt;
    opt.algorithm = canopy::sat_algorithm::single_pass;
    canopy::detail::build_sat_kept<std::uint8_t, std::uint32_t>(ctx(), image.view(), st.w, st.h, st.c, table.view(),
                                                                none.view(), opt, &kept);
    const auto got = table.to_host();
    expect_exact_u32(got, img, st.w, st.h, st.c, "kept scratch");
    EXPECT_GE(kept.epoch, 1u);
    EXPECT_LT(kept.epoch, canopy::detail::kept_epoch_limit);
  }
}

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// A summed_area_table build of a w x h RGBA8 image captured into a CUDA graph and replayed over new
// images (seeds from `seed`), each replay checked exactly, with an uncaptured build between
// replays. Under capture a build must not use the kept scratch's epochs or counts (a replay would
// reuse the captured ones).
void check_graph_replays(canopy::context& ctx, int w, int h, std::uint64_t seed) {
  const int c = 4;
  canopy::summed_area_table<std::uint32_t> sat(ctx);
  canopy::buffer<std::uint8_t> image(ctx, std::size_t(w) * h * c);
  image.assign(make_image<std::uint8_t>(w, h, c, distribution::uniform_full, seed));
  sat.build<std::uint8_t>(image.view(), w, h, c);  // sizes the table and leaves words in the kept scratch
  ctx.synchronize();
  const canopy_test::captured_graph captured(ctx, [&] { sat.build<std::uint8_t>(image.view(), w, h, c); });
  ASSERT_TRUE(captured.ok());
  for (int replay = 0; replay < 3; ++replay) {
    const auto img = make_image<std::uint8_t>(w, h, c, distribution::uniform_full, seed + 100 + replay);
    image.assign(img);
    ASSERT_EQ(cudaGraphLaunch(captured.exec, ctx.stream()), cudaSuccess);
    ctx.synchronize();
    std::vector<std::uint32_t> got(sat.table().size());
    ASSERT_EQ(cudaMemcpy(got.data(), sat.table().data(), got.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    expect_exact_u32(got, img, w, h, c, "replay " + std::to_string(replay));
    if (::testing::Test::HasFailure()) return;
    // An uncaptured build between replays uses (and advances) the kept scratch.
    sat.build<std::uint8_t>(image.view(), w, h, c);
  }
}

TEST_F(CudaSat, R8TablesAsRgba8Quads) {
  // R8 -> u32 builds whose width is a multiple of 16 (and whose image and table are 16-byte
  // aligned) may run as an RGBA8 image of width / 4 quads through the prefetching tile kernel,
  // which turns each quad's channel sums into the R8 table just before its stores (sat.cu,
  // quads_pay). Forced here at every size: one quad column and one quad row, partial tiles on the
  // right and at the bottom, several tile columns, 4K, a width whose quads (1024) the RGBA8
  // region kernel would take, and an all-255 8K image whose entries wrap twice. Kept
  // (summed_area_table, tagged words) and build_sat() (temporary scratch, flags) both.
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.quad_choice, canopy::detail::sat::testing_hooks::region_always);
  const std::vector<std::pair<int, int>> sizes = {{16, 1},    {16, 40},    {48, 33},   {528, 70},
                                                  {1040, 300}, {3840, 2160}, {4096, 200}};
  const unsigned long long before = hooks.quad_launches;
  unsigned builds = 0;
  for (auto [w, h] : sizes)
    for (auto d : {distribution::uniform_full, distribution::all_max}) {
      check_case<std::uint8_t, std::uint32_t>(ctx(), w, h, 1, canopy::sat_algorithm::single_pass, d,
                                              std::uint64_t(w) * 5 + h, 12);
      ++builds;
    }
  check_case<std::uint8_t, std::uint32_t>(ctx(), 7680, 4320, 1, canopy::sat_algorithm::single_pass,
                                          distribution::all_max, 3, 4);
  ++builds;
  for (auto [w, h] : {std::pair<int, int>{48, 33}, {3840, 2160}}) {
    const auto img = make_image<std::uint8_t>(w, h, 1, distribution::uniform_full, std::uint64_t(w) + 11);
    canopy::buffer<std::uint8_t> image(ctx(), img.size());
    image.assign(img);
    canopy::buffer<std::uint32_t> table(ctx(), img.size()), none(ctx(), 0);
    canopy::sat_options opt;
    opt.algorithm = canopy::sat_algorithm::single_pass;
    canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), w, h, 1, table.view(), none.view(), opt);
    expect_exact_u32(table.to_host(), img, w, h, 1, "build_sat " + std::to_string(w) + "x" + std::to_string(h));
    ++builds;
  }
  EXPECT_EQ(hooks.quad_launches - before, builds) << "every build above ran as quads";

  // A refused cooperative launch: the quads fall back to one tile per block, still exact.
  {
    const scoped_hook<int> surplus(hooks.persistent_grid_surplus, 1 << 20);
    const unsigned long long refusals = hooks.cooperative_refusals, launches = hooks.quad_launches;
    check_case<std::uint8_t, std::uint32_t>(ctx(), 3840, 2160, 1, canopy::sat_algorithm::single_pass,
                                            distribution::uniform_full, 21, 12);
    EXPECT_EQ(hooks.quad_launches - launches, 1u);
    if (ctx().device().compute_capability_major >= 8) EXPECT_EQ(hooks.cooperative_refusals - refusals, 1u);
  }
}

TEST_F(CudaSat, R8QuadsTakenWhereTheyPayAndWhereTheyFit) {
  // quads_pay's rule: widths of a multiple of 16, a 16-byte aligned image and table, and at least
  // 3 M pixels (measured on an H200, docs/sat.md). Everything else builds R8 directly, and agrees.
  auto& hooks = canopy::detail::sat::testing();
  const struct {
    int w, h;
    bool quads;
  } cases[] = {{3840, 2160, true}, {2560, 1440, true}, {2000, 1500, true},
                 {1920, 1080, false}, {2000, 1499, false}, {3844, 2160, false}, {3824, 2160, true}};
  for (const auto& k : cases) {
    SCOPED_TRACE(std::to_string(k.w) + "x" + std::to_string(k.h));
    const unsigned long long before = hooks.quad_launches;
    check_case<std::uint8_t, std::uint32_t>(ctx(), k.w, k.h, 1, canopy::sat_algorithm::automatic,
                                            distribution::uniform_full, std::uint64_t(k.w) + k.h, 4);
    EXPECT_EQ(hooks.quad_launches - before, k.quads ? 1u : 0u);
  }
  // A misaligned image (one byte into a buffer) cannot be read as 16-byte quads.
  {
    const int w = 3840, h = 2160;
    const auto img = make_image<std::uint8_t>(w, h, 1, distribution::uniform_full, 99);
    canopy::buffer<std::uint8_t> image(ctx(), img.size() + 1);
    canopy::copy(ctx(), canopy::span<const std::uint8_t>(canopy::host_span(img.data(), img.size())),
                 image.view().subspan(1, img.size()));
    canopy::summed_area_table<std::uint32_t> sat(ctx());
    const unsigned long long before = hooks.quad_launches;
    sat.build<std::uint8_t>(canopy::span<const std::uint8_t>(image.view().subspan(1, img.size())), w, h, 1);
    std::vector<std::uint32_t> got(sat.table().size());
    canopy::copy(ctx(), sat.table(), canopy::host_span(got.data(), got.size()));
    ctx().synchronize();
    EXPECT_EQ(hooks.quad_launches - before, 0u);
    expect_exact_u32(got, img, w, h, 1, "misaligned image");
  }
  // The hook's "never", and the two-pass baseline, build R8 directly.
  {
    const scoped_hook<int> never(hooks.quad_choice, canopy::detail::sat::testing_hooks::region_never);
    const unsigned long long before = hooks.quad_launches;
    check_case<std::uint8_t, std::uint32_t>(ctx(), 3840, 2160, 1, canopy::sat_algorithm::single_pass,
                                            distribution::uniform_full, 5, 4);
    check_case<std::uint8_t, std::uint32_t>(ctx(), 3840, 2160, 1, canopy::sat_algorithm::two_pass,
                                            distribution::uniform_full, 6, 4);
    EXPECT_EQ(hooks.quad_launches - before, 0u);
  }
}

// The tile kernel (1028 px: not a multiple of 256): tagged words with an epoch in the kept scratch.
TEST_F(CudaSat, GraphCaptureReplaysWithFreshScratch) { check_graph_replays(ctx(), 1028, 700, 500); }
#endif

TEST_F(CudaSat, Rgba8And4096x4096) {
  for (auto a : {canopy::sat_algorithm::single_pass, canopy::sat_algorithm::two_pass}) {
    check_case<std::uint8_t, std::uint32_t>(ctx(), 4096, 4096, 4, a, distribution::uniform_full, 42, 8);
    check_case<float, float>(ctx(), 4096, 4096, 1, a, distribution::uniform_full, 43, 8);
  }
}

// ---------------------------------------------------------------------------------------------
// The region kernel (RGBA8 -> u32, widths a multiple of 256 px, sm_90 with 227 KB of shared memory a
// block: H100, H200; detail/sat_region_kernels.cuh). Where the device cannot run it the same builds
// take the tile kernel, and the tests still check the tables; the launch counts are checked on
// sm_90.

bool region_kernel_expected(const canopy::context& ctx, int width = 256, int region_px = 256) {
  return ctx.device().compute_capability_major == 9 && ctx.device().shared_memory_per_block_optin >= 227 * 1024 &&
         width % region_px == 0 && width / region_px <= ctx.device().multiprocessors;
}

TEST_F(CudaSat, RegionKernelBuildsRgba8AtWidthsOf256) {
  // Heights that leave one chunk (1, 33), a partial last chunk, regions past the bottom (47 rows
  // over 8 region rows), several region columns (up to 15 at 3840), random and all-255 images; and
  // images so wide that the regions get shorter to leave shared memory for the exchange (16384 px:
  // 64 region columns, 48-row regions; 33792 px: one column a SM of an H100 or H200, 40-row
  // regions).
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  const std::vector<std::pair<int, int>> sizes = {{256, 1},    {256, 33},   {512, 47},   {1024, 100},  {768, 1000},
                                                  {2048, 300}, {3840, 2160}, {256, 3000}, {16384, 200}, {33792, 60}};
  const unsigned long long before = hooks.region_launches;
  int builds = 0;
  for (auto [w, h] : sizes)
    for (auto d : {distribution::uniform_full, distribution::all_max}) {
      check_case<std::uint8_t, std::uint32_t>(ctx(), w, h, 4, canopy::sat_algorithm::single_pass, d,
                                              std::uint64_t(w) * 7 + h, 12);
      if (region_kernel_expected(ctx(), w)) ++builds;
    }
  if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - before, unsigned(builds));
  // (region_always: small shapes too, which the size rule leaves to the tile kernel.) The automatic
  // algorithm takes it too; other widths, channel counts and the two-pass baseline do not.
  const unsigned long long after = hooks.region_launches;
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1024, 100, 4, canopy::sat_algorithm::automatic,
                                          distribution::uniform_full, 5, 12);
  if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - after, 1u);
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1000, 100, 4, canopy::sat_algorithm::single_pass,
                                          distribution::uniform_full, 6, 12);
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1024, 100, 3, canopy::sat_algorithm::single_pass,
                                          distribution::uniform_full, 7, 12);
  check_case<std::uint8_t, std::uint32_t>(ctx(), 1024, 100, 4, canopy::sat_algorithm::two_pass,
                                          distribution::uniform_full, 8, 12);
  EXPECT_EQ(hooks.region_launches - after, region_kernel_expected(ctx()) ? 1u : 0u);
}

TEST_F(CudaSat, RegionKernelTakenWhereItPays) {
  // launch_region's size rule (measured on an H100, docs/sat.md): at least 2/3 of the SMs' worth of
  // blocks and regions of at least 40 rows. Checked on 132-SM devices (H100 SXM, H200), where the
  // measurements were made; the tables are checked everywhere.
  auto& hooks = canopy::detail::sat::testing();
  const struct {
    int w, h;
    bool region;
  } cases[] = {{3840, 2160, true}, {3072, 1728, true},  {7680, 256, true},   {4096, 384, true},
               {1024, 768, false}, {2560, 1440, false}, {3840, 256, false}, {7680, 128, false}};
  for (const auto& k : cases) {
    SCOPED_TRACE(std::to_string(k.w) + "x" + std::to_string(k.h));
    const unsigned long long before = hooks.region_launches;
    check_case<std::uint8_t, std::uint32_t>(ctx(), k.w, k.h, 4, canopy::sat_algorithm::single_pass,
                                            distribution::uniform_full, std::uint64_t(k.w) + k.h, 4);
    if (region_kernel_expected(ctx(), k.w) && ctx().device().multiprocessors == 132)
      EXPECT_EQ(hooks.region_launches - before, k.region ? 1u : 0u);
  }
}

TEST_F(CudaSat, RegionKernelWrapsAt8K) {
  // An all-255 RGBA8 image at 7680 x 4320: entries reach 8.5e9 and wrap twice, yet each equals
  // 255 (x + 1)(y + 1) mod 2^32 in every channel. The same image through the tile kernel agrees.
  auto& hooks = canopy::detail::sat::testing();
  const int w = 7680, h = 4320, c = 4;
  canopy::buffer<std::uint8_t> image(ctx(), std::size_t(w) * h * c);
  image.fill_bytes(255);
  for (bool region : {true, false}) {
    SCOPED_TRACE(region ? "region kernel" : "tile kernel");
    const unsigned long long before = hooks.region_launches;
    canopy::summed_area_table<std::uint32_t> sat(ctx());
    {
      const scoped_hook<int> choice(hooks.region_kernel_choice, region ? canopy::detail::sat::testing_hooks::region_by_size
                                                                       : canopy::detail::sat::testing_hooks::region_never);
      sat.build<std::uint8_t>(image.view(), w, h, c);
    }
    std::vector<std::uint32_t> host(std::size_t(w) * h * c);
    canopy::copy(ctx(), sat.table(), canopy::host_span(host.data(), host.size()));
    ctx().synchronize();
    if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - before, region ? 1u : 0u);
    std::size_t bad = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const std::uint32_t want = std::uint32_t(255ull * std::uint64_t(x + 1) * std::uint64_t(y + 1));
        for (int k = 0; k < c; ++k)
          if (host[(std::size_t(y) * w + x) * c + k] != want && bad++ < 3) ADD_FAILURE() << x << "," << y << "," << k;
      }
    EXPECT_EQ(bad, 0u);
  }
}

TEST_F(CudaSat, RegionKernelKeptCountersAcrossBuildsGridsAndWraps) {
  // summed_area_table's kept exchange: each build adds its block count to every chunk's counter and
  // waits for builds x blocks, so a stale count would release a grid barrier early (a wrong table)
  // or never (a hang). Builds through one kept scratch: repeated sizes, sizes with other grids and
  // chunk counts (the counters are cleared), a tile-kernel build in between, and counts moved to
  // just below the wrap. Each table checked exactly.
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  canopy::detail::sat_kept_scratch kept(ctx());
  struct step {
    int w, h;
    bool near_wrap;
  };
  // 15360 x 100 and 3840 x 300 (where 60 SMs or more run 15360 px) have the same grid (60 x 2 and
  // 15 x 8 blocks) and chunk count (2) but regions of 48 and 56 rows, so a different exchange layout:
  // the counters must not move with it.
  const step steps[] = {{1024, 300, false}, {1024, 300, false}, {1024, 300, false}, {2048, 300, false},
                        {1024, 700, false}, {1028, 300, false}, {1024, 700, false}, {1024, 700, true},
                        {1024, 700, false}, {1024, 700, false}, {512, 47, false},   {512, 47, true},
                        {15360, 100, false}, {3840, 300, false}, {15360, 100, false}};
  int index = 0;
  const unsigned long long before = hooks.region_launches;
  int region_builds = 0;
  for (const step& st : steps) {
    SCOPED_TRACE("step " + std::to_string(index) + ": " + std::to_string(st.w) + "x" + std::to_string(st.h));
    const int c = 4;
    const auto img = make_image<std::uint8_t>(st.w, st.h, c, distribution::uniform_full, 2000 + index++);
    canopy::buffer<std::uint8_t> image(ctx(), img.size());
    image.assign(img);
    canopy::buffer<std::uint32_t> table(ctx(), img.size()), none(ctx(), 0);
    if (st.near_wrap && kept.region_blocks > 0) {
      // Moves the count (and the counters with it: a count the counters do not hold would never
      // release the barriers) to two builds below the wrap, which clears them.
      kept.region_builds = UINT_MAX / unsigned(kept.region_blocks) - 2;
      const std::vector<unsigned> counters(std::size_t(kept.region_chunks),
                                           kept.region_builds * unsigned(kept.region_blocks));
      ASSERT_EQ(cudaMemcpy(kept.region.data(), counters.data(), counters.size() * sizeof(unsigned), cudaMemcpyHostToDevice),
                cudaSuccess);  // the counters are at the start of the kept buffer
    }
    canopy::detail::build_sat_kept<std::uint8_t, std::uint32_t>(ctx(), image.view(), st.w, st.h, c, table.view(),
                                                                none.view(), {}, &kept);
    if (region_kernel_expected(ctx(), st.w)) ++region_builds;
    const auto got = table.to_host();
    expect_exact_u32(got, img, st.w, st.h, c, "kept counters");
    if (region_kernel_expected(ctx())) EXPECT_LT(kept.region_builds, UINT_MAX / unsigned(kept.region_blocks));
  }
  if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - before, unsigned(region_builds));
}

TEST_F(CudaSat, RegionKernelRefusedLaunchFallsBackAndBuildSatUsesTemporaryScratch) {
  // A grid that cannot be resident at once is refused by the runtime; the build must then take the
  // tile kernel and leave the kept counters as they were (the next build through the region kernel
  // must still be exact). build_sat() (no kept scratch) runs the region kernel with temporary
  // memory whose counters it clears.
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  canopy::summed_area_table<std::uint32_t> sat(ctx());
  const int w = 1024, h = 500, c = 4;
  canopy::buffer<std::uint8_t> image(ctx(), std::size_t(w) * h * c);
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const auto img = make_image<std::uint8_t>(w, h, c, distribution::uniform_full, 3000 + round);
    image.assign(img);
    const unsigned long long refusals = hooks.cooperative_refusals, launches = hooks.region_launches;
    {
      const scoped_hook<int> surplus(hooks.region_grid_surplus, round == 1 ? 1 << 20 : 0);
      sat.build<std::uint8_t>(image.view(), w, h, c);
    }
    std::vector<std::uint32_t> host(sat.table().size());
    canopy::copy(ctx(), sat.table(), canopy::host_span(host.data(), host.size()));
    ctx().synchronize();
    expect_exact_u32(host, img, w, h, c, "summed_area_table");
    if (region_kernel_expected(ctx())) {
      EXPECT_EQ(hooks.region_launches - launches, round == 1 ? 0u : 1u);
      EXPECT_GE(hooks.cooperative_refusals - refusals, round == 1 ? 1u : 0u);
    }
  }
  const auto img = make_image<std::uint8_t>(w, h, c, distribution::all_max, 3100);
  image.assign(img);
  canopy::buffer<std::uint32_t> table(ctx(), img.size()), none(ctx(), 0);
  const unsigned long long launches = hooks.region_launches;
  for (int i = 0; i < 2; ++i)
    canopy::build_sat<std::uint8_t, std::uint32_t>(ctx(), image.view(), w, h, c, table.view(), none.view());
  const auto got = table.to_host();
  expect_exact_u32(got, img, w, h, c, "build_sat");
  if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - launches, 2u);
}

#if CANOPY_HAS_CUDA && defined(__CUDACC__)
// Under capture the region kernel takes temporary memory and clears its counters in the graph, so
// every replay waits for its own build (a captured kept target would be stale at the replay).
TEST_F(CudaSat, RegionKernelGraphCaptureReplaysWithFreshCounters) {
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  const unsigned long long before = hooks.region_launches;
  check_graph_replays(ctx(), 1024, 700, 700);
  // Launches counted on the host: the first build, the captured one and the three between replays.
  if (region_kernel_expected(ctx())) EXPECT_EQ(hooks.region_launches - before, 5u);
}
#endif

// The RGBA32F -> f32 region kernel (detail/sat_region_f32_kernels.cuh: 128-px regions, the offsets
// computed in the kernel). Entries against the long-double reference within the float bound, box
// sums against brute force (check_case), at the RGBA8 kernel's shapes halved in width: one chunk,
// partial chunks, regions past the bottom, many region columns, images wide enough for shorter
// regions (7680 px: 60 region columns; 16896 px: 132), values near 0 and near 1000 (the offsets).
TEST_F(CudaSat, RegionKernelBuildsRgba32fAtWidthsOf128) {
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  const std::vector<std::pair<int, int>> sizes = {{128, 1},    {128, 33},    {256, 47},   {512, 100}, {384, 1000},
                                                  {1920, 300}, {3840, 2160}, {128, 3000}, {7680, 200}, {16896, 60}};
  const unsigned long long before = hooks.region_launches;
  int builds = 0;
  for (auto [w, h] : sizes)
    for (auto d : {distribution::uniform_full, distribution::large_offset}) {
      check_case<float, float>(ctx(), w, h, 4, canopy::sat_algorithm::single_pass, d, std::uint64_t(w) * 11 + h, 12);
      if (region_kernel_expected(ctx(), w, 128)) ++builds;
    }
  if (region_kernel_expected(ctx(), 128, 128)) EXPECT_EQ(hooks.region_launches - before, unsigned(builds));
  // Other widths, channel counts, the f64 table and the two-pass baseline do not take it.
  const unsigned long long after = hooks.region_launches;
  check_case<float, float>(ctx(), 1000, 100, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 6, 12);
  check_case<float, float>(ctx(), 1024, 100, 3, canopy::sat_algorithm::single_pass, distribution::uniform_full, 7, 12);
  check_case<float, double>(ctx(), 1024, 100, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 8, 12);
  check_case<float, float>(ctx(), 1024, 100, 4, canopy::sat_algorithm::two_pass, distribution::uniform_full, 9, 12);
  EXPECT_EQ(hooks.region_launches - after, 0u);
}

TEST_F(CudaSat, RegionKernelRgba32fKeptBuildsAndRefusal) {
  // Builds through one summed_area_table<float>: the same size again (the kept counters advance),
  // another grid (they are cleared), a launch the runtime refuses (the tile kernel builds it and the
  // counters stay), then the region kernel again; and build_sat's temporary memory. Each table
  // within the float bound of the reference, the offsets those the table was built with.
  auto& hooks = canopy::detail::sat::testing();
  const scoped_hook<int> always(hooks.region_kernel_choice, canopy::detail::sat::testing_hooks::region_always);
  canopy::summed_area_table<float> sat(ctx());
  const int c = 4;
  const struct {
    int w, h, surplus;
  } steps[] = {{1024, 500, 0}, {1024, 500, 0}, {2048, 300, 0}, {2048, 300, 1 << 20}, {2048, 300, 0}, {1024, 500, 0}};
  int index = 0;
  for (const auto& st : steps) {
    SCOPED_TRACE("step " + std::to_string(index) + ": " + std::to_string(st.w) + "x" + std::to_string(st.h));
    const auto img = make_image<float>(st.w, st.h, c, distribution::large_offset, 4000 + index++);
    canopy::buffer<float> image(ctx(), img.size());
    image.assign(img);
    const unsigned long long launches = hooks.region_launches;
    {
      const scoped_hook<int> surplus(hooks.region_grid_surplus, st.surplus);
      sat.build<float>(image.view(), st.w, st.h, c);
    }
    std::vector<float> table(sat.table().size()), offset(sat.offset().size());
    canopy::copy(ctx(), sat.table(), canopy::host_span(table.data(), table.size()));
    canopy::copy(ctx(), sat.offset(), canopy::host_span(offset.data(), offset.size()));
    ctx().synchronize();
    if (region_kernel_expected(ctx(), st.w, 128)) EXPECT_EQ(hooks.region_launches - launches, st.surplus ? 0u : 1u);
    EXPECT_EQ(float_entries_outside_bound(table, img, st.w, st.h, c, offset), 0u);
    EXPECT_NEAR(offset[0], 1000.5, 0.1);  // the sample mean of 1000 + U(0, 1)
  }
  const unsigned long long launches = hooks.region_launches;
  check_case<float, float>(ctx(), 2048, 300, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 4100, 8);
  canopy::buffer<float> image(ctx(), std::size_t(1024) * 300 * 4), table(ctx(), std::size_t(1024) * 300 * 4), off(ctx(), 4);
  const auto img = make_image<float>(1024, 300, 4, distribution::uniform_full, 4200);
  image.assign(img);
  canopy::build_sat<float, float>(ctx(), image.view(), 1024, 300, 4, table.view(), off.view());
  EXPECT_EQ(float_entries_outside_bound(table.to_host(), img, 1024, 300, 4, off.to_host()), 0u) << "build_sat";
  if (region_kernel_expected(ctx(), 1024, 128)) EXPECT_EQ(hooks.region_launches - launches, 2u);
}

TEST_F(CudaSat, RegionKernelRgba32fTakenWhereItPays) {
  // launch_region_f32's size rule (H100, docs/sat.md): 2^24 pixels and more, 90% of the SMs' worth
  // of blocks, at most 64 region columns. 3840 x 2160 and 6144 x 3456 take the tile kernel (checked
  // against the reference); 7680 x 4320 the region kernel, checked against the tile kernel's table
  // of the same image (every 61st entry, within twice the entry bound). Launch counts on 132-SM
  // devices, where the rule was measured.
  auto& hooks = canopy::detail::sat::testing();
  const bool counted = region_kernel_expected(ctx(), 128, 128) && ctx().device().multiprocessors == 132;
  const unsigned long long before = hooks.region_launches;
  check_case<float, float>(ctx(), 3840, 2160, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 4300, 4);
  check_case<float, float>(ctx(), 6144, 3456, 4, canopy::sat_algorithm::single_pass, distribution::uniform_full, 4301, 4);
  if (counted) EXPECT_EQ(hooks.region_launches - before, 0u);
  const int w = 7680, h = 4320, c = 4;
  const auto img = make_image<float>(w, h, c, distribution::large_offset, 4400);
  canopy::buffer<float> image(ctx(), img.size());
  image.assign(img);
  std::vector<float> tables[2];
  for (int region = 1; region >= 0; --region) {
    const unsigned long long launches = hooks.region_launches;
    canopy::summed_area_table<float> sat(ctx());
    {
      const scoped_hook<int> choice(hooks.region_kernel_choice, region ? canopy::detail::sat::testing_hooks::region_by_size
                                                                       : canopy::detail::sat::testing_hooks::region_never);
      sat.build<float>(image.view(), w, h, c);
    }
    tables[region].resize(sat.table().size());
    canopy::copy(ctx(), sat.table(), canopy::host_span(tables[region].data(), tables[region].size()));
    ctx().synchronize();
    if (counted) EXPECT_EQ(hooks.region_launches - launches, unsigned(region));
  }
  long double max_abs = 0;
  for (float v : tables[0]) max_abs = std::max(max_abs, (long double)std::fabs(v));
  const long double bound = 2 * entry_bound<float>(w, h, max_abs);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < tables[0].size(); i += 61)
    if (!(std::fabs((long double)tables[1][i] - (long double)tables[0][i]) <= bound) && bad++ < 3)
      ADD_FAILURE() << "entry " << i << ": " << tables[1][i] << " vs " << tables[0][i];
  EXPECT_EQ(bad, 0u);
}

TEST_F(CudaSat, WrapAround8192SquareOf255) {
  // 255 * 8192 * 8192 = 1.7e10: the table wraps four times, yet every entry equals
  // 255 (x + 1)(y + 1) mod 2^32 and every box below 2^32 sums exactly.
  const int w = 8192, h = 8192;
  canopy::buffer<std::uint8_t> image(ctx(), std::size_t(w) * h);
  image.fill_bytes(255);
  for (auto a : {canopy::sat_algorithm::single_pass, canopy::sat_algorithm::two_pass}) {
    canopy::summed_area_table<std::uint32_t> sat(ctx());
    canopy::sat_options opt;
    opt.algorithm = a;
    sat.build<std::uint8_t>(image.view(), w, h, 1, opt);
    std::vector<std::uint32_t> host(std::size_t(w) * h);
    canopy::copy(ctx(), sat.table(), canopy::host_span(host.data(), host.size()));
    ctx().synchronize();
    std::size_t bad = 0;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) {
        const std::uint32_t want = std::uint32_t(255ull * std::uint64_t(x + 1) * std::uint64_t(y + 1));
        if (host[std::size_t(y) * w + x] != want && bad++ < 3) ADD_FAILURE() << x << "," << y << " " << canopy::to_string(a);
      }
    EXPECT_EQ(bad, 0u);
    canopy::sat_view<std::uint32_t> v{host.data(), nullptr, w, h, 1};
    std::mt19937 rng(1);
    for (int i = 0; i < 1000; ++i) {
      const int x0 = int(rng() % w), y0 = int(rng() % h);
      const int x1 = std::min(w - 1, x0 + int(rng() % 4096)), y1 = std::min(h - 1, y0 + int(rng() % 4096));
      const std::uint64_t exact = 255ull * std::uint64_t(x1 - x0 + 1) * std::uint64_t(y1 - y0 + 1);
      if (exact < (1ull << 32)) {
        EXPECT_EQ(v.box_sum(x0, y0, x1, y1, 0), exact);
      }
    }
  }
}
