// The table both heavy-op benchmarks print (bench_matmul, bench_conv2d): the device, what was computed (the
// benchmark's own columns), then the median time, the throughput as a share of the device's peak, the error
// against the float64 check and the config that ran. One definition, so tools/gpu/speed_table.py reads both.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/support/bench_flags.h"
#include "benchmarks/support/result_table.h"
#include "benchmarks/support/timed_graph.h"
#include "ir/graph/graph.h"
#include "runtime/device.h"

namespace spire::bench {

// The device's two columns, `problem`, then the result columns; `config_title` heads the config's.
std::vector<Column> kernel_table_columns(std::vector<Column> problem, std::string config_title);

struct KernelRow {
  std::string device, device_name;
  std::vector<Cell> problem;       // one cell per column of `problem` above
  const TimedGraph* timed = nullptr;
  double flops = 0;                // of one step
  std::optional<double> peak_tflops;
  double max_relative_error = 0;   // against the float64 check
  double error_limit = 0;          // a larger error prints "FAIL"
};

// Prints what the table measures (`what`, in `dtype`), where its configs come from and how it is timed; returns the
// tuning cache file its graphs read (flags.tuning_cache, or the default one every spire command reads).
std::string announce_kernel_bench(const BenchFlags& flags, graph::DType dtype, const std::string& what);

// For each device flags.device names: opens it, prints its peak and the table's header, then has `rows` add its rows.
void for_each_bench_device(const BenchFlags& flags, graph::DType dtype, const ResultTable& table,
                           const std::function<void(rt::Device& dev, std::optional<double> peak_tflops)>& rows);

// Adds the row; returns whether its error is within the limit.
bool add_kernel_row(ResultTable& table, const KernelRow& row);

}  // namespace spire::bench
