// The ncclUniqueId rendezvous of nccl_ddp, kept free of CUDA and NCCL so it builds and is
// unit-tested everywhere: rank 0 serves a fixed-size blob (the 128-byte id) over TCP on
// MASTER_PORT and every other rank fetches it from MASTER_ADDR:MASTER_PORT, as torch
// passes the id through its TCPStore. Both sides are bounded by the init deadline:
//   - the server answers each peer's 4-byte rank with the blob until world_size - 1
//     distinct ranks have it, else fails naming the ranks that never came;
//   - a client retries its connect (rank 0 may start later) until the deadline, else
//     fails naming the address and the last error (refused, unreachable, DNS).
// Failures throw CollectiveError with class rendezvous (the workload exits 12).
#pragma once

#include <chrono>
#include <string>

namespace hanglab {

using IdExchangeClock = std::chrono::steady_clock;

// Listens on `port` (all interfaces, IPv6 dual-stack when available) and serves `blob`.
// Returns once ranks 1..world_size-1 each received it; world_size 1 returns at once.
void serve_id(int port, int world_size, const std::string& blob, IdExchangeClock::time_point deadline,
              std::chrono::milliseconds init_timeout);

// Fetches the `size`-byte blob from addr:port as `rank`.
std::string fetch_id(const std::string& addr, int port, int rank, size_t size, IdExchangeClock::time_point deadline,
                     std::chrono::milliseconds init_timeout);

}  // namespace hanglab
