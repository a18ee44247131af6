// The text form of a graph: print() and parse() round-trip exactly (print(parse(print(g))) == print(g)).
// The grammar is documented at the top of printer.cpp.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph/graph.h"

namespace spire::graph {

// A syntax or semantic error in graph text, with its 1-based line and column:
// "line 3, column 14: expected ')' after arguments of conv2d".
class ParseError : public GraphError {
 public:
  ParseError(int line, int column, const std::string& message);
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }  // without the position prefix

 private:
  int line_;
  int column_;
  std::string message_;
};

std::string print(const Graph& g);
Graph parse(std::string_view text);

}  // namespace spire::graph
