// The tokenizer benchmark corpus: >= 1 MiB of English and C code that ships with Debian,
// built deterministically (tools/tokref/bench.js builds the same one for the reference):
// every file of /usr/share/common-licenses, then /usr/include/*.h, in byte order of their
// names, until the total reaches 1 MiB. Each file is one document.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ebb::bench {

inline constexpr size_t kCorpusBytes = 1 << 20;

inline std::vector<std::string> TokenizerCorpus() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  auto add_dir = [&files](const fs::path& dir, const std::string& ext) {
    std::vector<fs::path> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_regular_file() && (ext.empty() || e.path().extension() == ext)) {
        found.push_back(e.path());
      }
    }
    std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
      return a.filename().string() < b.filename().string();
    });
    files.insert(files.end(), found.begin(), found.end());
  };
  add_dir("/usr/share/common-licenses", "");
  add_dir("/usr/include", ".h");
  std::vector<std::string> docs;
  size_t total = 0;
  for (const auto& f : files) {
    if (total >= kCorpusBytes) break;
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    // Keep only valid UTF-8 documents (both tokenizers then see identical input).
    bool ok = true;
    for (size_t i = 0; i < text.size() && ok;) {
      const auto c = static_cast<unsigned char>(text[i]);
      size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
      if (n == 0 || i + n > text.size()) ok = false;
      for (size_t k = 1; ok && k < n; ++k)
        ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      i += n;
    }
    if (!ok || text.empty()) continue;
    total += text.size();
    docs.push_back(std::move(text));
  }
  return docs;
}

// The corpus split into lines (each line keeps its "\n").
inline std::vector<std::string> SplitLines(const std::vector<std::string>& docs) {
  std::vector<std::string> lines;
  for (const auto& d : docs) {
    size_t start = 0;
    while (start < d.size()) {
      size_t nl = d.find('\n', start);
      size_t end = nl == std::string::npos ? d.size() : nl + 1;
      lines.push_back(d.substr(start, end - start));
      start = end;
    }
  }
  return lines;
}

}  // namespace ebb::bench
