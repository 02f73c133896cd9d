#include "tokenizer/decoder.h"

#include "tokenizer/byte_level.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace ebb::tok {
namespace {

void ReplaceAll(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  size_t pos = s.find(from);
  if (pos == std::string::npos) return;
  std::string out;
  size_t last = 0;
  while (pos != std::string::npos) {
    out.append(s, last, pos - last);
    out.append(to);
    last = pos + from.size();
    pos = s.find(from, last);
  }
  out.append(s, last, std::string::npos);
  s.swap(out);
}

// The reference's wordpiece::cleanup (also used by CTC).
void Cleanup(std::string& s) {
  ReplaceAll(s, " .", ".");
  ReplaceAll(s, " ?", "?");
  ReplaceAll(s, " !", "!");
  ReplaceAll(s, " ,", ",");
  ReplaceAll(s, " ' ", "'");
  ReplaceAll(s, " n't", "n't");
  ReplaceAll(s, " 'm", "'m");
  ReplaceAll(s, " do not", " don't");
  ReplaceAll(s, " 's", "'s");
  ReplaceAll(s, " 've", "'ve");
  ReplaceAll(s, " 're", "'re");
}

class ByteLevelDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      if (!AppendBytesFromByteLevel(bytes, t)) bytes.append(t);
    }
    tokens.assign(1, Utf8Lossy(bytes));
  }
};

class MetaspaceDecoder final : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (t.find(replacement_) == std::string::npos) continue;
      std::string out;
      size_t pos = 0;
      while (pos < t.size()) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && strip_first_)) out.push_back(' ');
          pos += replacement_.size();
        } else {
          out.push_back(t[pos++]);
        }
      }
      t.swap(out);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (t.compare(0, prefix_.size(), prefix_) == 0) {
          // The reference uses replacen(prefix, "", 1): the first occurrence, which is here.
          t.erase(0, prefix_.size());
        } else {
          t = " " + t;
        }
      }
      if (cleanup_) Cleanup(t);
    }
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeSuffixDecoder final : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      ReplaceAll(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::string out;
      size_t last = 0;
      bool any = false;
      pattern_.ForEachMatch(t, [&](size_t b, size_t e) {
        any = true;
        out.append(t, last, b - last);
        out.append(content_);
        last = e;
      });
      if (!any) continue;
      out.append(t, last, std::string::npos);
      t.swap(out);
    }
  }

 private:
  Pattern pattern_;
  std::string content_;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallbackDecoder final : public Decoder {
 public:
  bool HasByteFallback() const override { return true; }
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    out.reserve(tokens.size());
    std::string pending;  // bytes of consecutive <0xXX> tokens
    auto flush = [&] {
      if (pending.empty()) return;
      if (FindInvalidUtf8(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementUtf8);
      }
      pending.clear();
    };
    for (std::string& t : tokens) {
      int byte = ParseByteFallbackToken(t);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens.swap(out);
  }
};

class FuseDecoder final : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDecoder final : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0;
      for (size_t k = 0; k < start_ && begin < t.size(); ++k) {
        size_t next = begin;
        if (NextCodePoint(t, next) != content_) break;
        begin = next;
      }
      size_t end = t.size();
      for (size_t k = 0; k < stop_ && end > begin; ++k) {
        size_t char_start;
        if (PrevCodePoint(t, end, char_start) != content_) break;
        end = char_start;
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class CtcDecoder final : public Decoder {
 public:
  CtcDecoder(std::string pad, std::string delimiter, bool cleanup)
      : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // dedup consecutive
      std::string t = tokens[i];
      ReplaceAll(t, pad_, "");
      if (cleanup_) {
        Cleanup(t);
        ReplaceAll(t, delimiter_, " ");
      }
      if (!t.empty()) out.push_back(std::move(t));
    }
    tokens.swap(out);
  }

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> items)
      : items_(std::move(items)) {}
  void DecodeChain(std::vector<std::string>& tokens) const override {
    for (const auto& d : items_) d->DecodeChain(tokens);
  }
  bool HasByteFallback() const override {
    for (const auto& d : items_)
      if (d->HasByteFallback()) return true;
    return false;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> items_;
};

}  // namespace

int ParseByteFallbackToken(std::string_view t) {
  // Like Rust's u8::from_str_radix(&t[3..5], 16), which also accepts a leading '+'.
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  if (t[3] == '+') return HexDigit(t[4]);
  const int hi = HexDigit(t[3]), lo = HexDigit(t[4]);
  if (hi < 0 || lo < 0) return -1;
  return hi * 16 + lo;
}

std::string Decoder::Decode(std::vector<std::string>& tokens) const {
  DecodeChain(tokens);
  if (tokens.size() == 1) return std::move(tokens[0]);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::unique_ptr<Decoder> MakeDecoder(const JsonRef& j) {
  const std::string type = j.Type();
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    std::string replacement = j.GetString("replacement", "\xE2\x96\x81");
    if (CountCodePoints(replacement) != 1) j.At("replacement").Fail("expected a single character");
    bool strip_first = true;
    if (auto ps = j.Find("prepend_scheme")) {
      const std::string v = ps->String();
      if (v != "always" && v != "first" && v != "never") {
        ps->Fail("unsupported prepend_scheme \"" + v + "\"");
      }
      strip_first = v != "never";
    } else {
      strip_first = j.GetBool("add_prefix_space", true);
    }
    return std::make_unique<MetaspaceDecoder>(replacement, strip_first);
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(j.GetString("prefix", "##"),
                                              j.GetBool("cleanup", true));
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeSuffixDecoder>(j.GetString("suffix", "</w>"));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(MakePattern(j.At("pattern")), j.At("content").String());
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    JsonRef c = j.At("content");
    std::string content = c.String();
    if (CountCodePoints(content) != 1) c.Fail("expected a single character");
    size_t i = 0;
    const char32_t ch = NextCodePoint(content, i);
    const int64_t start = j.GetInt("start", 0), stop = j.GetInt("stop", 0);
    if (start < 0 || stop < 0) j.Fail("start/stop must be non-negative");
    return std::make_unique<StripDecoder>(ch, static_cast<size_t>(start),
                                          static_cast<size_t>(stop));
  }
  if (type == "CTC") {
    return std::make_unique<CtcDecoder>(j.GetString("pad_token", "<pad>"),
                                        j.GetString("word_delimiter_token", "|"),
                                        j.GetBool("cleanup", true));
  }
  if (type == "Sequence") {
    JsonRef list = j.At("decoders");
    std::vector<std::unique_ptr<Decoder>> items;
    for (size_t i = 0; i < list.Size(); ++i) items.push_back(MakeDecoder(list.Index(i)));
    return std::make_unique<SequenceDecoder>(std::move(items));
  }
  j.At("type").Fail("unsupported decoder \"" + type + "\"");
}

}  // namespace ebb::tok
