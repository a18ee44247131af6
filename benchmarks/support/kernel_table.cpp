#include "benchmarks/support/kernel_table.h"

#include <cmath>

#include <fmt/format.h>

#include "benchmarks/support/bench_dtype.h"
#include "runtime/device_ids.h"
#include "tuning/tuning_cache.h"

namespace spire::bench {

std::vector<Column> kernel_table_columns(std::vector<Column> problem, std::string config_title) {
  std::vector<Column> columns = {{"device", "device", 9, true}, {"", "device_name", 0, true, false}};
  columns.insert(columns.end(), problem.begin(), problem.end());
  columns.insert(columns.end(), {{"ms", "ms", 9},
                                 {"TFLOP/s", "tflops", 8},
                                 {"% peak", "peak_pct", 6},
                                 {"max rel err", "max_rel_err", 11},
                                 {"config from", "config_source", 11, true},
                                 {std::move(config_title), "config", 0, true}});
  return columns;
}

std::string announce_kernel_bench(const BenchFlags& flags, graph::DType dtype, const std::string& what) {
  const std::string cache = flags.tuning_cache.empty() ? tuning::TuningCache::default_path() : flags.tuning_cache;
  fmt::print("{} {} through the graph lowering; config from the tuning cache {} where 'tuned', else the template's "
             "heuristic; median of {} runs (device timestamps)\n",
             graph::dtype_name(dtype), what, cache, flags.runs);
  return cache;
}

void for_each_bench_device(const BenchFlags& flags, graph::DType dtype, const ResultTable& table,
                           const std::function<void(rt::Device& dev, std::optional<double> peak_tflops)>& rows) {
  for (const std::string& id : rt::device_ids(flags.device)) {
    auto dev = rt::open_device(id);
    const std::optional<double> peak = print_device_peak(dev->info(), dtype, flags.peak_tflops);
    table.print_header();
    rows(*dev, peak);
  }
}

bool add_kernel_row(ResultTable& table, const KernelRow& row) {
  const TimedGraph& t = *row.timed;
  const bool ok = row.max_relative_error <= row.error_limit;
  Cell error(fmt::format("{}{:.1e}", ok ? "" : "FAIL ", row.max_relative_error));
  error.csv = fmt::format("{:.3g}", row.max_relative_error);
  const double tflops = row.flops / (t.ms * 1e-3) / 1e12;
  std::vector<Cell> cells = {row.device, row.device_name};
  cells.insert(cells.end(), row.problem.begin(), row.problem.end());
  cells.insert(cells.end(), {Cell::number(t.ms, 4), Cell::significant(tflops, 3),
                             Cell::number(row.peak_tflops ? 100 * tflops / *row.peak_tflops : NAN, 1), error,
                             t.tuned ? "tuned" : "heuristic", t.config});
  table.add(cells);
  return ok;
}

}  // namespace spire::bench
