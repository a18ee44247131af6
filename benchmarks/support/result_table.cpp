#include "benchmarks/support/result_table.h"

#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

namespace spire::bench {

namespace {

void print_line(std::FILE* out, const std::vector<Column>& columns, const std::vector<std::string>& texts) {
  std::string line;
  for (size_t i = 0; i < columns.size(); ++i) {
    const Column& c = columns[i];
    if (!c.printed) continue;
    if (!line.empty()) line += "  ";
    line += c.left ? fmt::format("{:<{}}", texts[i], c.width) : fmt::format("{:>{}}", texts[i], c.width);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  fmt::print(out, "{}\n", line);
  std::fflush(out);
}

// RFC 4180: configs hold commas ("tile_m=128,tile_n=128"), so such fields are quoted.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

Cell Cell::number(double v, int decimals) {
  if (std::isnan(v)) return Cell("n/a");
  Cell c(fmt::format("{:.{}f}", v, decimals));
  c.csv = fmt::format("{:.6g}", v);
  return c;
}

Cell Cell::significant(double v, int digits) {
  if (std::isnan(v)) return Cell("n/a");
  Cell c(fmt::format("{:.{}g}", v, digits));
  c.csv = fmt::format("{:.6g}", v);
  return c;
}

void ResultTable::print_header(std::FILE* out) const {
  std::vector<std::string> titles;
  for (const Column& c : columns_) titles.push_back(c.title);
  print_line(out, columns_, titles);
}

void ResultTable::add(const std::vector<Cell>& cells, std::FILE* out) {
  if (cells.size() != columns_.size())
    throw std::logic_error(fmt::format("a row of {} cells for {} columns", cells.size(), columns_.size()));
  std::vector<std::string> texts, csv;
  for (const Cell& c : cells) {
    texts.push_back(c.text);
    csv.push_back(c.csv);
  }
  print_line(out, columns_, texts);
  csv_rows_.push_back(std::move(csv));
}

void ResultTable::write_csv(const std::string& path) const {
  std::ofstream f(path);
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) f << (i ? "," : "") << csv_field(fields[i]);
    f << "\n";
  };
  std::vector<std::string> header;
  for (const Column& c : columns_) header.push_back(c.csv);
  line(header);
  for (const auto& r : csv_rows_) line(r);
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace spire::bench
