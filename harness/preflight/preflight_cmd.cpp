#include "preflight/preflight_cmd.hpp"

#include <iostream>

#include "preflight/preflight.hpp"

namespace hanglab::preflight {

CLI::App* add_preflight_subcommand(CLI::App& app, PreflightCommand& c) {
  Options& o = c.options;
  auto* s = app.add_subcommand(
      "preflight",
      "check, before launch and on every node, the job's own settings against the cluster: shm, CPU quota, memory, "
      "limits, checkpoint storage, interfaces, MASTER_ADDR/MASTER_PORT, agreement across nodes, pairwise reachability, "
      "path MTU and loss (run once per node: srun --ntasks-per-node=1, mpirun -npernode 1, or standalone). Not "
      "catchable before launch: skipped collectives, uneven batches, killed ranks (the run-time detectors catch them). "
      "Exit 0 passed, 1 a check failed, 2 bad input, 4 a check needs what this node lacks (a GPU)");
  s->add_option("--ckpt-dir", o.ckpt_dir, "the job's checkpoint directory: writable, free space, write+fsync rate");
  s->add_option("--ckpt-bytes", c.ckpt_bytes, "one checkpoint as this node writes it (default: the probe size)");
  s->add_option("--ckpt-budget-s", o.ckpt_budget_s, "a save longer than this stalls the job's peers")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s->add_option("--ckpt-probe-bytes", c.ckpt_probe_bytes, "bytes written and fsynced to measure the rate (default 16MiB)");
  s->add_option("--ckpt-stall-s", o.ckpt_stall_s, "one write or fsync longer than this is a stall")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  s->add_option("--ranks-per-node", o.ranks_per_node, "ranks the job starts on each node (default: from the environment)")
      ->check(CLI::Range(1, 1 << 20));
  s->add_option("--loader-workers", o.loader_workers, "DataLoader workers per rank (for /dev/shm and CPUs)")
      ->check(CLI::Range(0, 1024));
  s->add_option("--batch-bytes", c.batch_bytes, "one batch as a loader worker hands it over (for /dev/shm)");
  s->add_option("--prefetch", o.prefetch, "batches in flight per worker (torch's prefetch_factor)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  s->add_option("--mem-per-rank", c.mem_per_rank, "resident memory one rank needs (default 512MiB)");
  s->add_option("--backend", o.backend, "the job's backend: gloo or nccl (default gloo)")
      ->check(CLI::IsMember({"gloo", "nccl"}));
  s->add_option("--port", o.port, "rendezvous port for torchrun workers (torchrun's agent holds MASTER_PORT)")
      ->check(CLI::Range(1, 65535));
  s->add_option("--deadline-s", o.deadline_s, "every path of preflight ends within this")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  s->add_option("--loss-probes", o.loss_probes, "echoed datagrams per peer to measure loss (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  s->add_option("--bandwidth-s", o.bandwidth_s, "seconds of TCP stream to the next node in a ring (0: none)")
      ->check(CLI::Range(0.0, 60.0));
  s->add_option("--min-mbps", o.min_mbps, "bandwidth floor in Mbit/s (with --bandwidth-s)")->check(CLI::NonNegativeNumber);
  s->add_flag("--smoke", o.smoke, "also run a collective with the job's backend through torch.distributed (--python)");
  s->add_option("--python", o.python, "the job's Python (versions, --smoke)")->capture_default_str();
  s->add_option("--format", o.format, "text, json or junit")
      ->check(CLI::IsMember({"text", "json", "junit"}))
      ->capture_default_str();
  s->add_option("--out", o.out,
                "also write the report here: JSON for a .json name, JUnit for .xml, else --format ({node} in the name: "
                "every node writes its own)");
  return s;
}

int preflight_command(PreflightCommand c) {
  Options& o = c.options;
  try {
    if (!c.ckpt_bytes.empty()) o.ckpt_bytes = parse_bytes(c.ckpt_bytes, "--ckpt-bytes");
    if (!c.ckpt_probe_bytes.empty()) o.ckpt_probe_bytes = parse_bytes(c.ckpt_probe_bytes, "--ckpt-probe-bytes");
    if (!c.batch_bytes.empty()) o.batch_bytes = parse_bytes(c.batch_bytes, "--batch-bytes");
    if (!c.mem_per_rank.empty()) o.mem_per_rank = parse_bytes(c.mem_per_rank, "--mem-per-rank");
    if (o.ckpt_probe_bytes < 1) throw UsageError("--ckpt-probe-bytes must be at least 1 byte");
    if ((o.loader_workers > 0 && o.batch_bytes < 0) || (o.batch_bytes >= 0 && o.loader_workers < 0))
      throw UsageError("--loader-workers and --batch-bytes go together: the /dev/shm need is workers x prefetch x batch");
    if (o.min_mbps > 0 && o.bandwidth_s <= 0) throw UsageError("--min-mbps needs --bandwidth-s (how long to measure)");
  } catch (const UsageError& e) {
    std::cerr << "hanglab preflight: " << e.what() << "\n";
    return 2;
  }
  return run_preflight(o, current_env(), std::cout, std::cerr);
}

}  // namespace hanglab::preflight
