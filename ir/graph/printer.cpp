// The text form of a graph. One line per value, then one per output and one per state update:
//
//   x = input() : f32[8,1,28,28]
//   convnet.0.weight = parameter() : f32[6,1,5,5]
//   momentum.convnet.0.weight = state() {init=0.0} : f32[6,1,5,5]
//   constant_7 = constant() {value=0.5} : f32[]
//   conv1 = conv2d(x, convnet.0.weight) {stride=[1,1], padding=[2,2], dilation=[1,1], groups=1} : f32[8,6,28,28]
//   output loss = cross_entropy_12
//   update convnet.0.weight <- sub_40
//
// Grammar (whitespace between tokens is free; a line ends a statement):
//   line      := value | output | update | comment | empty
//   value     := NAME '=' OP '(' [NAME {',' NAME}] ')' [attrs] ':' type
//   attrs     := '{' ATTR '=' attrvalue {',' ATTR '=' attrvalue} '}'   (exactly the op's attributes, in order)
//   attrvalue := INT | FLOAT | 'true' | 'false' | '[' [INT {',' INT}] ']' | IDENT
//   type      := DTYPE '[' [INT {',' INT}] ']'                          (f32[] is a scalar)
//   output    := 'output' NAME '=' NAME          (output name, then the value it names)
//   update    := 'update' NAME '<-' NAME         (parameter or state, then its new value)
//   comment   := '#' anything
// NAME: letters, digits, '_' and '.', not starting with a digit or '.'. Floats print in the shortest form
// that reads back to the same double, always with a '.', an exponent, or as inf / -inf / nan.
// Every value's type is printed; the parser checks it against the op's shape rule.
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"

namespace spire::graph {
namespace {

std::string format_float(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_attr(const AttrValue& v) {
  struct Visitor {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return format_float(d); }
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(const std::vector<int64_t>& l) const { return shape_to_string(l); }
    std::string operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, v);
}

}  // namespace

std::string print(const Graph& g) {
  std::string out;
  for (const Node& n : g.nodes()) {
    out += fmt::format("{} = {}(", n.name, op_name(n.op));
    for (size_t i = 0; i < n.inputs.size(); ++i) out += (i ? ", " : "") + g.node(n.inputs[i]).name;
    out += ")";
    if (!n.attrs.empty()) {
      out += " {";
      bool first = true;
      for (const auto& [name, value] : n.attrs.items()) {
        out += fmt::format("{}{}={}", first ? "" : ", ", name, format_attr(value));
        first = false;
      }
      out += "}";
    }
    out += " : " + n.type.to_string() + "\n";
  }
  for (const NamedOutput& o : g.outputs()) out += fmt::format("output {} = {}\n", o.name, g.node(o.value).name);
  for (const StateUpdate& u : g.state_updates())
    out += fmt::format("update {} <- {}\n", g.node(u.target).name, g.node(u.value).name);
  return out;
}

}  // namespace spire::graph
