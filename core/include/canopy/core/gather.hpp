// canopy/core/gather.hpp — gather and scatter of fixed-size records by an index.
//
// Records are record_bytes bytes each (a multiple of 4, from 4 to 256). On the CUDA backend a
// record of 16 bytes or more is moved by a group of record_bytes/16 threads with 16-byte accesses
// (8- or 4-byte accesses when the size or alignment asks for it), so that neighbouring threads
// touch neighbouring bytes of the same record; 4- and 8-byte records go one per thread. Sorting
// large records = sort_gather_index() (split.hpp) + gather_records().
//
// Index entries must be < the number of records they address (in for gather, out for scatter).
// The host backend checks this up front and throws invalid_argument. The CUDA backend checks on the
// device (throwing at once would need a stream synchronisation): it skips out-of-range entries
// without touching memory outside the buffers (the affected output records are left unchanged) and
// the context's next synchronisation (context::synchronize, buffer::to_host) throws
// invalid_argument naming the index argument (device_check in context.hpp).
// in and out must not overlap. Neither function synchronises the stream.
#pragma once

#include <canopy/core/context.hpp>
#include <canopy/core/span.hpp>

#include <cstddef>
#include <cstdint>

namespace canopy {

//! out record i = in record gather_index[i], for i < gather_index.size().
//! in.size() and out.size() are multiples of record_bytes; out holds gather_index.size() records.
//! O(n * record_bytes) bytes moved, no temporary memory.
void gather_records(context& ctx, span<const std::byte> in, span<std::byte> out, std::size_t record_bytes,
                    span<const std::uint32_t> gather_index);

//! out record scatter_index[i] = in record i, for i < scatter_index.size().
//! in holds scatter_index.size() records. If two entries are equal, which record lands there is
//! unspecified (a permutation has none).
void scatter_records(context& ctx, span<const std::byte> in, span<std::byte> out, std::size_t record_bytes,
                     span<const std::uint32_t> scatter_index);

}  // namespace canopy
