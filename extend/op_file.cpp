// The op file reader (op_file.h).
#include "extend/op_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <stdexcept>


namespace spire::ext {

namespace {

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string_view::npos ? std::string() : std::string(s.substr(a, b - a + 1));
}

std::string read_text(const std::filesystem::path& p, const std::string& what) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw graph::GraphError(fmt::format("cannot read {} {}", what, p.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double parse_double(const std::string& s, const std::function<void(const std::string&)>& fail) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) fail(fmt::format("'{}' is not a number", s));
  return v;
}

// "f32[7,33]" -> its type.
graph::TensorType parse_type(const std::string& s, const std::function<void(const std::string&)>& fail) {
  const size_t open = s.find('['), close = s.rfind(']');
  if (open == std::string::npos || close != s.size() - 1) fail(fmt::format("'{}' is not a type such as f32[7,33]", s));
  auto dtype = graph::dtype_from_name(trim(s.substr(0, open)));
  if (!dtype) fail(fmt::format("'{}' names no dtype", s.substr(0, open)));
  graph::Shape shape;
  std::stringstream dims(s.substr(open + 1, close - open - 1));
  for (std::string d; std::getline(dims, d, ',');) {
    d = trim(d);
    if (d.empty()) continue;
    const double v = parse_double(d, fail);
    if (v < 0 || v != double(int64_t(v))) fail(fmt::format("'{}' is not a dimension", d));
    shape.push_back(int64_t(v));
  }
  return {*dtype, shape};
}

// "f32[7,33], f32[33]": types separated by commas outside brackets.
std::vector<graph::TensorType> parse_types(const std::string& s, const std::function<void(const std::string&)>& fail) {
  std::vector<graph::TensorType> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(parse_type(trim(cur), fail));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty()) out.push_back(parse_type(trim(cur), fail));
  return out;
}

}  // namespace

std::vector<CustomOp> parse_op_file(const std::string& text, const std::filesystem::path& path, const ReadFile& read_file) {
  std::vector<CustomOp> ops;
  std::istringstream lines(text);
  int line_no = 0;
  std::string raw;
  auto fail = [&](const std::string& what) {
    throw graph::GraphError(fmt::format("{}:{}: {}", path.string(), line_no, what));
  };
  while (std::getline(lines, raw)) {
    ++line_no;
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty()) continue;
    if (line.rfind("op ", 0) == 0) {
      // op NAME(IN, ...)
      const size_t open = line.find('('), close = line.rfind(')');
      if (open == std::string::npos || close != line.size() - 1) fail("expected `op NAME(INPUT, ...)`");
      CustomOp op;
      op.name = trim(line.substr(3, open - 3));
      op.inputs.clear();
      op.dtype = graph::DType::F32;  // GLSL kernels are written for one type; f32 unless the file says otherwise
      std::stringstream names(line.substr(open + 1, close - open - 1));
      for (std::string n; std::getline(names, n, ',');)
        if (!trim(n).empty()) op.inputs.push_back(trim(n));
      if (op.inputs.empty()) fail(fmt::format("op {} takes no inputs", op.name));
      ops.push_back(std::move(op));
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string::npos) fail(fmt::format("expected `key: value`, got `{}`", line));
    if (ops.empty()) fail("a description before the first `op NAME(INPUT, ...)` line");
    CustomOp& op = ops.back();
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (value.empty()) fail(fmt::format("`{}` has no value", key));
    if (key == "reference") {
      op.reference_expression = value;
    } else if (key.rfind("gradient ", 0) == 0) {
      const std::string input = trim(key.substr(9));
      if (!op.gradient_expressions.emplace(input, value).second) fail(fmt::format("a second gradient for {}", input));
    } else if (key == "glsl") {
      const std::filesystem::path shader = path.parent_path() / value;
      op.glsl = read_file ? read_file(shader) : read_text(shader, "the GLSL kernel");
      op.glsl_name = shader.string();
    } else if (key == "elements_per_workgroup") {
      const double v = parse_double(value, fail);
      if (v < 1 || v != double(uint32_t(v))) fail(fmt::format("elements_per_workgroup {} is not a positive integer", value));
      op.elements_per_workgroup = uint32_t(v);
    } else if (key == "configs") {
      std::stringstream list(value);
      for (std::string c; std::getline(list, c, ';');) {
        try {
          op.configs.push_back(lowering::heavy::Config::parse(trim(c)));
        } catch (const std::invalid_argument& e) {
          fail(fmt::format("configs: `{}` is not NAME=INT,...: {}", trim(c), e.what()));
        }
      }
    } else if (key == "tolerance") {
      op.tolerance = parse_double(value, fail);
    } else if (key == "gradient_tolerance") {
      op.gradient_tolerance = parse_double(value, fail);
    } else if (key == "dtype") {
      auto t = graph::dtype_from_name(value);
      if (!t) fail(fmt::format("dtype `{}` names no dtype (f32, f64, i32, i64, bool)", value));
      op.dtype = *t;
    } else if (key == "elementwise") {
      if (value != "true" && value != "false") fail("elementwise: true or false");
      op.elementwise = value == "true";
    } else if (key == "test") {
      std::stringstream cases(value);
      for (std::string c; std::getline(cases, c, ';');) {
        std::vector<graph::TensorType> types = parse_types(trim(c), fail);
        if (types.size() != op.inputs.size())
          fail(fmt::format("a test case of {} types; {} takes {} inputs", types.size(), op.name, op.inputs.size()));
        op.test_cases.push_back(std::move(types));
      }
    } else if (key == "test_range") {
      std::stringstream r(value);
      std::string lo, hi;
      r >> lo >> hi;
      op.test_lo = parse_double(lo, fail);
      op.test_hi = parse_double(hi, fail);
      if (!(op.test_lo < op.test_hi)) fail("test_range needs LO < HI");
    } else {
      fail(fmt::format("unknown key `{}` (reference, gradient INPUT, glsl, elements_per_workgroup, configs, dtype, "
                       "elementwise, tolerance, gradient_tolerance, test, test_range)",
                       key));
    }
  }
  if (ops.empty()) throw graph::GraphError(fmt::format("{}: no `op NAME(INPUT, ...)` line", path.string()));
  for (const CustomOp& op : ops) {
    if (op.reference_expression.empty())
      throw graph::GraphError(fmt::format("{}: op {} has no `reference:`", path.string(), op.name));
    if (op.glsl.empty())
      throw graph::GraphError(fmt::format("{}: op {} has no kernel (`glsl: FILE`)", path.string(), op.name));
  }
  return ops;
}

std::vector<std::string> load_ops(const std::filesystem::path& file_or_dir) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(file_or_dir, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(file_or_dir, ec))
      if (entry.path().extension() == ".op") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) throw graph::GraphError(fmt::format("--ops {}: the directory holds no .op file", file_or_dir.string()));
  } else if (std::filesystem::exists(file_or_dir, ec)) {
    files.push_back(file_or_dir);
  } else {
    throw graph::GraphError(fmt::format("--ops {}: no such file or directory", file_or_dir.string()));
  }
  std::vector<std::string> names;
  for (const auto& f : files)
    for (CustomOp& op : parse_op_file(read_text(f, "the op file"), f)) {
      names.push_back(op.name);
      try {
        register_custom_op(std::move(op));
      } catch (const graph::GraphError& e) {
        throw graph::GraphError(fmt::format("{}: {}", f.string(), e.what()));
      }
    }
  return names;
}

}  // namespace spire::ext
