// What the decoder tests read: PyTorch's tokens written at test setup (decoder_models.py) and the figures `spire
// generate` prints.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/spire_cli.h"

namespace spire {

// The prompt decoder_models.py's greedy data start from (PROMPT there).
inline const std::string kPrompt = "3,14,15,92,65";

// The first line of a file of MODELS_DIR (NAME.greedy.txt: PyTorch's greedy tokens, comma-separated).
inline std::string first_line(const std::string& file) {
  std::ifstream f(model(file));
  std::string line;
  std::getline(f, line);
  return line;
}

// The text after `label` in `out` up to the end of its line ("" when absent): "tokens: " gives the new ids.
inline std::string printed(const std::string& out, const std::string& label) {
  const size_t at = out.find(label);
  if (at == std::string::npos) return "";
  return out.substr(at + label.size(), out.find('\n', at) - at - label.size());
}

inline std::vector<long> split_ids(const std::string& text) {
  std::vector<long> ids;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) ids.push_back(std::stol(item));
  return ids;
}

}  // namespace spire
