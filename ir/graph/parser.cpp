// Parser of the text form written by printer.cpp (the grammar is documented there). Errors are ParseErrors
// with the 1-based line and column of the offending token and what was expected there.
#include <charconv>
#include <cmath>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ir/graph/op_table.h"
#include "ir/graph/text_form.h"

namespace spire::graph {

ParseError::ParseError(int line, int column, const std::string& message)
    : GraphError(fmt::format("line {}, column {}: {}", line, column, message)),
      line_(line), column_(column), message_(message) {}

namespace {

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '.'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Where a token starts, for messages about it after it was read.
struct Pos {
  int line;
  int column;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Graph parse() {
    while (!at_end()) {
      skip_spaces();
      if (at_end()) break;
      if (peek() == '\n') { advance(); continue; }
      if (peek() == '#') { skip_comment(); continue; }
      statement();
      end_of_line();
    }
    return std::move(g_);
  }

 private:
  // ---- characters and positions
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  Pos here() const { return {line_, int(pos_ - line_start_) + 1}; }

  void advance() {
    if (text_[pos_] == '\n') { ++line_; line_start_ = pos_ + 1; }
    ++pos_;
  }

  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\r')) advance();
  }

  void skip_comment() {
    while (!at_end() && peek() != '\n') advance();
  }

  [[noreturn]] void fail(Pos p, const std::string& message) const { throw ParseError(p.line, p.column, message); }
  [[noreturn]] void fail_here(const std::string& message) const { fail(here(), message); }

  // What is at the cursor, for "expected X, found Y" messages.
  std::string found() const {
    if (at_end()) return "end of input";
    if (peek() == '\n') return "end of line";
    size_t end = pos_ + 1;
    if (is_name_char(peek()) || peek() == '-')
      while (end < text_.size() && (is_name_char(text_[end]) || text_[end] == '+' || text_[end] == '-')) ++end;
    return fmt::format("'{}'", text_.substr(pos_, end - pos_));
  }

  void expect(char c, const std::string& what) {
    skip_spaces();
    if (peek() != c) fail_here(fmt::format("{}, found {}", what, found()));
    advance();
  }

  bool accept(char c) {
    skip_spaces();
    if (peek() != c) return false;
    advance();
    return true;
  }

  std::string name(const std::string& what) {
    skip_spaces();
    if (!is_name_start(peek())) fail_here(fmt::format("expected {}, found {}", what, found()));
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) advance();
    return std::string(text_.substr(start, pos_ - start));
  }

  // A number token: [-] digits / '.' / exponent, or inf / nan.
  std::string number_token() {
    skip_spaces();
    size_t start = pos_;
    if (peek() == '-') advance();
    while (!at_end()) {
      char c = peek();
      bool exponent_sign = (c == '+' || c == '-') && pos_ > start && (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
      if (is_digit(c) || c == '.' || c == 'e' || c == 'E' || exponent_sign || (c >= 'a' && c <= 'z')) advance();
      else break;
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  int64_t integer(const std::string& what) {
    skip_spaces();
    Pos p = here();
    std::string tok = number_token();
    int64_t v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || ec != std::errc() || end != tok.data() + tok.size()) {
      if (tok.empty()) fail(p, fmt::format("expected {}, found {}", what, found()));
      fail(p, fmt::format("expected {}, found '{}'", what, tok));
    }
    return v;
  }

  double floating(const std::string& what) {
    skip_spaces();
    Pos p = here();
    std::string tok = number_token();
    if (tok == "inf") return std::numeric_limits<double>::infinity();
    if (tok == "-inf") return -std::numeric_limits<double>::infinity();
    if (tok == "nan") return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto [end, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || ec != std::errc() || end != tok.data() + tok.size())
      fail(p, fmt::format("expected {}, found {}", what, tok.empty() ? found() : "'" + tok + "'"));
    return v;
  }

  // '[' [INT {',' INT}] ']'
  std::vector<int64_t> int_list(const std::string& what) {
    expect('[', fmt::format("expected '[' to start {}", what));
    std::vector<int64_t> out;
    if (accept(']')) return out;
    for (;;) {
      out.push_back(integer(fmt::format("an integer in {}", what)));
      if (accept(']')) return out;
      expect(',', fmt::format("expected ',' or ']' in {}", what));
    }
  }

  // ---- statements

  void end_of_line() {
    skip_spaces();
    if (peek() == '#') skip_comment();
    if (!at_end() && peek() != '\n') fail_here(fmt::format("expected the end of the line, found {}", found()));
  }

  Value value_ref(const std::string& role) {
    skip_spaces();
    Pos p = here();
    std::string n = name(fmt::format("the name of {}", role));
    auto v = g_.find(n);
    if (!v) fail(p, fmt::format("unknown value '{}' ({})", n, role));
    return *v;
  }

  void statement() {
    Pos start = here();
    std::string first = name("a value name, 'output' or 'update'");
    skip_spaces();
    if (first == "output" && peek() != '=') return output_statement();
    if (first == "update" && peek() != '=') return update_statement();
    value_statement(first, start);
  }

  void output_statement() {
    Pos p = here();
    std::string out_name = name("an output name after 'output'");
    expect('=', fmt::format("expected '=' after output name '{}'", out_name));
    Value v = value_ref(fmt::format("output '{}'", out_name));
    try {
      g_.output(out_name, v);
    } catch (const GraphError& e) {
      fail(p, e.what());
    }
  }

  void update_statement() {
    Pos p = here();
    Value target = value_ref("the parameter or state to update");
    skip_spaces();
    if (peek() != '<' || pos_ + 1 >= text_.size() || text_[pos_ + 1] != '-')
      fail_here(fmt::format("expected '<-' after the update target, found {}", found()));
    advance();
    advance();
    Value v = value_ref("the new value of the update");
    try {
      g_.state_update(target, v);
    } catch (const GraphError& e) {
      fail(p, e.what());
    }
  }

  AttrValue attr_value(const OpInfo& info, const AttrSpec& spec) {
    std::string what = fmt::format("attribute {} of {}", spec.name, info.name);
    switch (spec.kind) {
      case AttrKind::Int: return integer(fmt::format("an integer for {}", what));
      case AttrKind::Float: return floating(fmt::format("a number for {}", what));
      case AttrKind::Bool: {
        Pos p = here();
        std::string b = name(fmt::format("true or false for {}", what));
        if (b != "true" && b != "false") fail(p, fmt::format("expected true or false for {}, found '{}'", what, b));
        return b == "true";
      }
      case AttrKind::Ints: return int_list(what);
      case AttrKind::String: return name(fmt::format("a word for {}", what));
    }
    fail_here("unreachable attribute kind");
  }

  Attrs attributes(const OpInfo& info) {
    Attrs attrs;
    if (!accept('{')) return attrs;
    for (;;) {
      skip_spaces();
      Pos p = here();
      std::string attr = name(fmt::format("an attribute name of {}", info.name));
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& s : info.attrs)
        if (s.name == attr) spec = &s;
      if (!spec) {
        std::string known;
        for (const AttrSpec& s : info.attrs) known += (known.empty() ? "" : ", ") + std::string(s.name);
        fail(p, fmt::format("{} has no attribute '{}' (it takes: {})", info.name, attr, known.empty() ? "none" : known));
      }
      if (attrs.has(attr)) fail(p, fmt::format("attribute '{}' of {} is given twice", attr, info.name));
      expect('=', fmt::format("expected '=' after attribute name '{}'", attr));
      attrs.set(attr, attr_value(info, *spec));
      if (accept('}')) return attrs;
      expect(',', fmt::format("expected ',' or '}}' in the attributes of {}", info.name));
    }
  }

  TensorType type(const std::string& value_name) {
    skip_spaces();
    Pos p = here();
    std::string dt = name(fmt::format("a dtype for '{}' (bool, i32, i64, f32, f64, f16, bf16)", value_name));
    auto d = dtype_from_name(dt);
    if (!d) fail(p, fmt::format("unknown dtype '{}' (expected bool, i32, i64, f32, f64, f16 or bf16)", dt));
    return {*d, int_list(fmt::format("the shape of '{}'", value_name))};
  }

  void value_statement(const std::string& value_name, Pos name_pos) {
    if (auto it = defined_on_.find(value_name); it != defined_on_.end())
      fail(name_pos, fmt::format("duplicate value name '{}' (first defined on line {})", value_name, it->second));
    expect('=', fmt::format("expected '=' after value name '{}'", value_name));
    skip_spaces();
    Pos op_pos = here();
    std::string op_text = name("an op name");
    auto op = op_from_name(op_text);
    if (!op) fail(op_pos, fmt::format("unknown op '{}'", op_text));
    const OpInfo& info = op_info(*op);
    expect('(', fmt::format("expected '(' after op name {}", info.name));
    std::vector<Value> args;
    if (!accept(')')) {
      for (;;) {
        args.push_back(value_ref(fmt::format("argument {} of {}", args.size(), info.name)));
        if (accept(')')) break;
        expect(',', fmt::format("expected ',' or ')' after arguments of {}", info.name));
      }
    }
    Attrs attrs = attributes(info);
    expect(':', fmt::format("expected ':' and the type of '{}'", value_name));
    skip_spaces();
    Pos type_pos = here();
    TensorType declared = type(value_name);

    Value v;
    try {
      if (is_leaf(*op)) v = g_.add_leaf(*op, value_name, declared, attrs);
      else v = g_.add_node(*op, args, attrs, value_name);
    } catch (const ParseError&) {
      throw;
    } catch (const GraphError& e) {
      fail(op_pos, e.what());
    }
    if (g_.type(v) != declared)
      fail(type_pos, fmt::format("'{}' is declared {}, but {} of its arguments gives {}", value_name,
                                 declared.to_string(), info.name, g_.type(v).to_string()));
    defined_on_.emplace(value_name, name_pos.line);
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  size_t line_start_ = 0;
  Graph g_;
  std::map<std::string, int, std::less<>> defined_on_;
};

}  // namespace

Graph parse(std::string_view text) { return Parser(text).parse(); }

}  // namespace spire::graph
