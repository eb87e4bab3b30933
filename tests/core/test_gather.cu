// Gather/scatter of records of 4 to 256 bytes against memcpy loops; unaligned buffers; sorting
// large records as sort_gather_index + gather_records; bad arguments; out-of-range indices.
#include "common/backends.hpp"

#include <canopy/core/gather.hpp>
#include <canopy/core/split.hpp>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using canopy_test::BackendTest;

namespace {

using canopy_test::expect_error;

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> b(n);
  for (auto& x : b) x = std::byte(rng() & 0xff);
  return b;
}

// `skew` bytes are put in front of both buffers so that 16-byte records can sit at 4-byte alignment.
void check_move(canopy::context& ctx, std::size_t records, std::size_t in_records, std::size_t record_bytes,
                bool scatter, std::size_t skew, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint32_t> index(records);
  if (scatter) {  // a permutation of the output slots
    std::iota(index.begin(), index.end(), 0u);
    std::shuffle(index.begin(), index.end(), rng);
  } else {  // any entries, repeats allowed
    for (auto& i : index) i = std::uint32_t(rng() % in_records);
  }
  const std::size_t out_records = scatter ? records : records;
  const auto in = random_bytes(in_records * record_bytes, seed + 1);
  std::vector<std::byte> expected(out_records * record_bytes);
  for (std::size_t r = 0; r < records; ++r) {
    const std::size_t src = scatter ? r : index[r], dst = scatter ? index[r] : r;
    std::memcpy(&expected[dst * record_bytes], &in[src * record_bytes], record_bytes);
  }
  canopy::buffer<std::byte> din(ctx, skew + in.size()), dout(ctx, skew + expected.size());
  canopy::buffer<std::uint32_t> didx(ctx, records);
  didx.assign(index);
  std::vector<std::byte> staged(skew + in.size());
  std::copy(in.begin(), in.end(), staged.begin() + skew);
  din.assign(staged);
  const auto in_view = canopy::span<const std::byte>(din.data() + skew, in.size(), din.space());
  const auto out_view = canopy::span<std::byte>(dout.data() + skew, expected.size(), dout.space());
  if (scatter)
    canopy::scatter_records(ctx, in_view, out_view, record_bytes, didx.view());
  else
    canopy::gather_records(ctx, in_view, out_view, record_bytes, didx.view());
  const auto got = dout.to_host();
  ASSERT_TRUE(std::equal(expected.begin(), expected.end(), got.begin() + skew))
      << (scatter ? "scatter" : "gather") << " of " << records << " records of " << record_bytes
      << " bytes, skew " << skew;
}

}  // namespace

class GatherTest : public BackendTest {};

TEST_P(GatherTest, EveryRecordSizeBothDirections) {
  std::uint64_t seed = 1;
  for (std::size_t bytes : {4, 8, 12, 16, 20, 24, 32, 48, 64, 100, 128, 252, 256})
    for (std::size_t n : {0, 1, 2, 31, 33, 1025, 5000}) {
      check_move(ctx(), n, std::max<std::size_t>(n, 1) + 7, bytes, false, 0, seed++);
      check_move(ctx(), n, n, bytes, true, 0, seed++);
    }
}

TEST_P(GatherTest, UnalignedBuffersTakeNarrowerAccesses) {
  std::uint64_t seed = 100;
  for (std::size_t bytes : {16, 32, 64, 256})
    for (std::size_t skew : {4, 8, 12}) {
      check_move(ctx(), 3001, 4000, bytes, false, skew, seed++);
      check_move(ctx(), 3001, 3001, bytes, true, skew, seed++);
    }
}

TEST_P(GatherTest, SortingLargeRecordsIsGatherIndexPlusGather) {
  for (std::size_t bytes : {32, 128, 256}) {
    const std::size_t n = 20011;
    std::mt19937_64 rng(bytes);
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = rng() % 5000 << 16;  // 48-bit keys with many repeats
    auto recs = random_bytes(n * bytes, bytes);
    for (std::size_t i = 0; i < n; ++i) std::memcpy(&recs[i * bytes], &keys[i], 8);
    canopy::buffer<std::uint64_t> dk(ctx(), n);
    canopy::buffer<std::uint32_t> gi(ctx(), n);
    canopy::buffer<std::byte> din(ctx(), recs.size()), dout(ctx(), recs.size());
    dk.assign(keys);
    din.assign(recs);
    canopy::sort_gather_index<std::uint64_t>(ctx(), dk.view(), gi.view(), 0, 48);
    canopy::gather_records(ctx(), din.view(), dout.view(), bytes, gi.view());
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return keys[a] < keys[b]; });
    const auto got = dout.to_host();
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(&got[i * bytes], &recs[order[i] * bytes], bytes), 0) << bytes << " bytes, i=" << i;
  }
}

TEST_P(GatherTest, RefusesBadArguments) {
  canopy::buffer<std::byte> in(ctx(), 64), out(ctx(), 64);
  canopy::buffer<std::uint32_t> idx(ctx(), 4), idx3(ctx(), 3);
  idx.assign(std::vector<std::uint32_t>{0, 1, 2, 3});
  for (std::size_t bad : {0, 2, 6, 260, 512})
    expect_error<canopy::invalid_argument>([&] { canopy::gather_records(ctx(), in.view(), out.view(), bad, idx.view()); },
                                           {"canopy::gather_records", "record_bytes"});
  expect_error<canopy::invalid_argument>([&] { canopy::gather_records(ctx(), in.view(), out.view(), 16, idx3.view()); },
                                         {"canopy::gather_records", "out", "records"});
  expect_error<canopy::invalid_argument>([&] { canopy::scatter_records(ctx(), in.view(), out.view(), 16, idx3.view()); },
                                         {"canopy::scatter_records", "in", "records"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::gather_records(ctx(), in.view().first(60), out.view(), 8, idx.view()); },
      {"canopy::gather_records", "in", "multiple"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::gather_records(ctx(), in.view(), in.view(), 16, idx.view()); }, {"out", "overlaps"});
  expect_error<canopy::invalid_argument>(
      [&] { canopy::gather_records(ctx(), canopy::span<const std::byte>(nullptr, 64, ctx().space()), out.view(), 16, idx.view()); },
      {"canopy::gather_records", "in", "null"});
  const canopy::memory_space other =
      ctx().space() == canopy::memory_space::host ? canopy::memory_space::device : canopy::memory_space::host;
  std::vector<std::byte> wrong(64);
  expect_error<canopy::invalid_argument>(
      [&] { canopy::scatter_records(ctx(), canopy::span<const std::byte>(wrong.data(), 64, other), out.view(), 16, idx.view()); },
      {"canopy::scatter_records", "in", "memory"});
}

CANOPY_INSTANTIATE_BACKENDS(GatherTest);

TEST(HostGather, OutOfRangeIndexIsRefused) {
  canopy::context& ctx = canopy_test::host_context();
  std::vector<std::byte> in(64), out(64);
  std::vector<std::uint32_t> idx = {0, 1, 4, 2};
  expect_error<canopy::invalid_argument>(
      [&] {
        canopy::gather_records(ctx, canopy::host_span<const std::byte>(in.data(), 64), canopy::host_span(out.data(), 64),
                               16, canopy::host_span<const std::uint32_t>(idx.data(), 4));
      },
      {"canopy::gather_records", "gather_index", "entry 2 = 4"});
}

class CudaGather : public canopy_test::CudaTest {};

// The CUDA backend cannot refuse a bad index before the kernel runs: the kernel skips it, moves the
// rest, and the context's next synchronisation throws naming the argument; the flag is then clear.
TEST_F(CudaGather, OutOfRangeEntriesAreSkippedAndReportedAtTheNextSynchronisation) {
  canopy::context& ctx = this->ctx();
  const auto in = random_bytes(4 * 32, 5);
  std::vector<std::byte> sentinel(4 * 32, std::byte(0xab));
  canopy::buffer<std::byte> din(ctx, in.size()), dout(ctx, in.size());
  canopy::buffer<std::uint32_t> didx(ctx, 4);
  din.assign(in);
  dout.assign(sentinel);
  didx.assign(std::vector<std::uint32_t>{3, 100000, 0, 4});
  canopy::gather_records(ctx, din.view(), dout.view(), 32, didx.view());
  expect_error<canopy::invalid_argument>([&] { ctx.synchronize(); },
                                         {"canopy::gather_records", "gather_index", "found on the device"});
  const auto got = dout.to_host();  // reported once: this synchronisation does not throw again
  EXPECT_EQ(std::memcmp(&got[0], &in[3 * 32], 32), 0);
  EXPECT_EQ(std::memcmp(&got[32], &sentinel[0], 32), 0);
  EXPECT_EQ(std::memcmp(&got[64], &in[0], 32), 0);
  EXPECT_EQ(std::memcmp(&got[96], &sentinel[0], 32), 0);

  // Scatter: reported through buffer::to_host (which synchronises); in-range records land.
  dout.assign(sentinel);
  didx.assign(std::vector<std::uint32_t>{1, 7, 2, 0});
  canopy::scatter_records(ctx, din.view(), dout.view(), 32, didx.view());
  expect_error<canopy::invalid_argument>([&] { (void)dout.to_host(); },
                                         {"canopy::scatter_records", "scatter_index", "found on the device"});
  const auto scattered = dout.to_host();
  EXPECT_EQ(std::memcmp(&scattered[32], &in[0], 32), 0);
  EXPECT_EQ(std::memcmp(&scattered[64], &in[2 * 32], 32), 0);
  EXPECT_EQ(std::memcmp(&scattered[0], &in[3 * 32], 32), 0);
  EXPECT_EQ(std::memcmp(&scattered[96], &sentinel[0], 32), 0);

  // A valid gather afterwards reports nothing.
  didx.assign(std::vector<std::uint32_t>{0, 1, 2, 3});
  canopy::gather_records(ctx, din.view(), dout.view(), 32, didx.view());
  EXPECT_NO_THROW(ctx.synchronize());
  EXPECT_EQ(dout.to_host(), in);
}

TEST_F(CudaGather, LargeRecordsMatchHost) {
  canopy::context& ctx = this->ctx();
  for (std::size_t bytes : {4, 16, 128}) {
    const std::size_t n = (std::size_t(1) << 22) + 1;
    check_move(ctx, n, n, bytes, false, 0, bytes);
    check_move(ctx, n, n, bytes, true, 0, bytes + 1);
  }
}
