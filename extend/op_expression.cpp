// The op expression parser (recursive descent with precedence climbing) and builder.
#include "extend/op_expression.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <variant>
#include <vector>

namespace spire::ext {

struct ExprNode {
  enum class Kind { Number, Name, Call } kind = Kind::Number;
  double number = 0;
  std::string name;                  // Name: the variable; Call: the op
  std::vector<std::shared_ptr<const ExprNode>> args;
  graph::Attrs attrs;                // Call only
  int column = 0;
};

namespace {

using NodePtr = std::shared_ptr<const ExprNode>;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  NodePtr parse_all() {
    NodePtr e = expr(0);
    skip();
    if (pos_ != s_.size()) fail(fmt::format("unexpected '{}' after the expression", s_[pos_]));
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ExpressionError(fmt::format("column {}: {}", pos_ + 1, what));
  }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c, const char* after) {
    if (!eat(c)) fail(fmt::format("expected '{}' {}", c, after));
  }
  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }
  std::string identifier() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && name_char(s_[pos_])) ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }
  double number() {
    skip();
    double v = 0;
    auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (ec != std::errc()) fail("expected a number");
    pos_ = size_t(end - s_.data());
    return v;
  }

  static int precedence(char op) { return op == '+' || op == '-' ? 1 : op == '*' || op == '/' ? 2 : 0; }

  NodePtr binary(char op, NodePtr a, NodePtr b, int column) {
    static const std::map<char, std::string> names = {{'+', "add"}, {'-', "sub"}, {'*', "mul"}, {'/', "div"}};
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprNode::Kind::Call;
    n->name = names.at(op);
    n->args = {std::move(a), std::move(b)};
    n->column = column;
    return n;
  }

  NodePtr expr(int min_precedence) {
    NodePtr left = unary();
    for (;;) {
      skip();
      if (pos_ >= s_.size()) return left;
      const char op = s_[pos_];
      const int p = precedence(op);
      if (p == 0 || p < min_precedence) return left;
      const int column = int(pos_) + 1;
      ++pos_;
      NodePtr right = expr(p + 1);
      left = binary(op, std::move(left), std::move(right), column);
    }
  }

  NodePtr unary() {
    skip();
    const int column = int(pos_) + 1;
    if (eat('-')) {
      auto n = std::make_shared<ExprNode>();
      n->kind = ExprNode::Kind::Call;
      n->name = "neg";
      n->args = {unary()};
      n->column = column;
      return n;
    }
    return primary();
  }

  NodePtr primary() {
    skip();
    if (pos_ >= s_.size()) fail("expected a name, a number or '('");
    const int column = int(pos_) + 1;
    if (eat('(')) {
      NodePtr e = expr(0);
      expect(')', "to close '('");
      return e;
    }
    auto n = std::make_shared<ExprNode>();
    n->column = column;
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      n->number = number();
      return n;
    }
    n->name = identifier();
    if (n->name.empty()) fail(fmt::format("unexpected '{}'", c));
    if (!eat('(')) {
      n->kind = ExprNode::Kind::Name;
      return n;
    }
    n->kind = ExprNode::Kind::Call;
    if (eat(')')) return n;
    do {
      // `name=value` is an attribute; anything else an operand.
      skip();
      size_t save = pos_;
      std::string id = identifier();
      if (!id.empty() && eat('=')) {
        n->attrs.set(id, attr_value());
        continue;
      }
      pos_ = save;
      if (!n->attrs.empty()) fail("an operand after the attributes: write the operands first");
      n->args.push_back(expr(0));
    } while (eat(','));
    expect(')', fmt::format("after the arguments of {}", n->name).c_str());
    return n;
  }

  graph::AttrValue attr_value() {
    skip();
    if (eat('[')) {
      std::vector<int64_t> ints;
      if (!eat(']')) {
        do ints.push_back(int64_t(number()));
        while (eat(','));
        expect(']', "to close the list");
      }
      return ints;
    }
    if (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' || s_[pos_] == '.')) {
      size_t start = pos_;
      if (s_[pos_] == '-') ++pos_;
      double v = number();
      const std::string_view lexeme = s_.substr(start, pos_ - start);
      if (s_[start] == '-') v = -v;
      if (lexeme.find_first_of(".eE") == std::string_view::npos) return int64_t(v);
      return v;
    }
    std::string id = identifier();
    if (id.empty()) fail("expected an attribute value");
    if (id == "true") return true;
    if (id == "false") return false;
    return id;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

void collect_names(const ExprNode& n, std::vector<std::string>& out) {
  if (n.kind == ExprNode::Kind::Name && std::find(out.begin(), out.end(), n.name) == out.end()) out.push_back(n.name);
  for (const auto& a : n.args) collect_names(*a, out);
}

graph::Value build_node(graph::Graph& g, const ExprNode& n, const std::map<std::string, graph::Value>& names) {
  switch (n.kind) {
    case ExprNode::Kind::Name: {
      auto it = names.find(n.name);
      if (it == names.end()) {
        std::string known;
        for (const auto& [k, v] : names) known += (known.empty() ? "" : ", ") + k;
        throw ExpressionError(fmt::format("column {}: unknown name '{}' (known here: {})", n.column, n.name, known));
      }
      return it->second;
    }
    case ExprNode::Kind::Number:
      throw ExpressionError(fmt::format("column {}: a number alone has no dtype; use it as an operand", n.column));
    case ExprNode::Kind::Call: break;
  }
  // Operands first; numbers take the dtype of the first operand that is not a number.
  std::vector<graph::Value> operands(n.args.size());
  // A bool operand (where's condition) does not type numbers unless nothing else does.
  std::optional<graph::DType> dtype, bool_dtype;
  for (size_t i = 0; i < n.args.size(); ++i)
    if (n.args[i]->kind != ExprNode::Kind::Number) {
      operands[i] = build_node(g, *n.args[i], names);
      const graph::DType t = g.type(operands[i]).dtype;
      if (t == graph::DType::Bool) bool_dtype = t;
      else if (!dtype) dtype = t;
    }
  if (!dtype) dtype = bool_dtype;
  for (size_t i = 0; i < n.args.size(); ++i)
    if (n.args[i]->kind == ExprNode::Kind::Number) {
      if (!dtype)
        throw ExpressionError(fmt::format("column {}: every operand of {} is a number, so none has a dtype", n.column, n.name));
      operands[i] = g.scalar(n.args[i]->number, *dtype);
    }
  if (!graph::op_from_name(n.name)) throw ExpressionError(fmt::format("column {}: unknown op '{}'", n.column, n.name));
  return g.op(n.name, std::move(operands), n.attrs);
}

}  // namespace

OpExpression OpExpression::parse(std::string_view text) {
  OpExpression e;
  e.text_ = std::string(text);
  e.root_ = Parser(e.text_).parse_all();
  return e;
}

graph::Value OpExpression::build(graph::Graph& g, const std::map<std::string, graph::Value>& names) const {
  return build_node(g, *root_, names);
}

std::vector<std::string> OpExpression::names() const {
  std::vector<std::string> out;
  collect_names(*root_, out);
  return out;
}

}  // namespace spire::ext
