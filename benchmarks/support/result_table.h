// A benchmark's rows, printed as an aligned text table as they come (a long run shows progress) and kept
// for a CSV file at the end, which tools/gpu/speed_table.py joins with PyTorch's.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace spire::bench {

struct Column {
  std::string title;  // in the printed table
  std::string csv;    // the CSV header's name
  int width = 10;
  bool left = false;    // left-aligned (text), else right-aligned (numbers)
  bool printed = true;  // false: only in the CSV (what the joined tables need but a screen need not show)
};

// A cell's printed text and its CSV value: numbers keep full precision in the CSV.
struct Cell {
  std::string text, csv;
  Cell(std::string s) : text(s), csv(std::move(s)) {}  // NOLINT: text cells are written as plain strings
  Cell(const char* s) : Cell(std::string(s)) {}        // NOLINT
  static Cell number(double v, int decimals);          // "n/a" for a NaN
  static Cell significant(double v, int digits);       // 3 digits: "66.9", "0.000508"; "n/a" for a NaN
};

class ResultTable {
 public:
  explicit ResultTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void print_header(std::FILE* out = stdout) const;
  // Prints the row and keeps it; `cells` has one entry per column.
  void add(const std::vector<Cell>& cells, std::FILE* out = stdout);
  // Every row so far, with a header line; throws std::runtime_error naming the file when it cannot write.
  void write_csv(const std::string& path) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> csv_rows_;
};

}  // namespace spire::bench
