// PieceList: the pre-tokenized pieces of one text segment, stored back to back in one buffer
// so that splitting and transforming pieces does not allocate per piece. Scratch object; not
// thread-safe (each Encode call uses its own).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ebb::tok {

struct PieceList {
  struct Piece {
    size_t begin;
    size_t size;
    // True when the piece starts at offset 0 of the original input (Metaspace's
    // prepend_scheme "first" only prepends to such a piece).
    bool at_start;
  };

  std::string buf;
  std::vector<Piece> pieces;

  void Clear() {
    buf.clear();
    pieces.clear();
  }
  size_t size() const { return pieces.size(); }
  std::string_view View(size_t i) const {
    return std::string_view(buf.data() + pieces[i].begin, pieces[i].size);
  }
  bool AtStart(size_t i) const { return pieces[i].at_start; }

  // Appends a piece (empty pieces are dropped, as the reference drops them). `s` must not
  // point into this list's own buffer.
  void Add(std::string_view s, bool at_start) {
    if (s.empty()) return;
    pieces.push_back(Piece{buf.size(), s.size(), at_start});
    buf.append(s);
  }

  // Incremental construction of a piece: BeginPiece(), append to buf, EndPiece().
  size_t BeginPiece() const { return buf.size(); }
  void EndPiece(size_t begin, bool at_start) {
    if (buf.size() == begin) return;
    pieces.push_back(Piece{begin, buf.size() - begin, at_start});
  }
};

}  // namespace ebb::tok
