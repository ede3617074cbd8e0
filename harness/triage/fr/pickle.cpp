// read_pickle(): see pickle.hpp. Objects live in an arena and refer to their items by index, so
// that the memo (BINPUT/BINGET) shares a container the way Python does: a dict memoized while
// empty and filled later is seen filled. The JSON is built once at STOP.
#include "triage/fr/pickle.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace hanglab::fr {

namespace {

constexpr size_t kMaxDepth = 256;            // nesting of the result
constexpr size_t kMaxNodes = 50'000'000;     // JSON nodes built (shared memo entries expand)
constexpr size_t kMaxStack = 10'000'000;     // the unpickler's stack

struct Obj {
  enum Kind : uint8_t { kNone, kBool, kInt, kFloat, kStr, kList, kDict } kind = kNone;
  bool b = false;
  long long i = 0;
  double f = 0;
  std::string s;
  std::vector<size_t> items;  // list: elements; dict: key, value, key, value...
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  nlohmann::json run() {
    while (true) {
      if (p_ >= in_.size()) fail("truncated: no STOP opcode");
      const size_t at = p_;
      const uint8_t op = static_cast<uint8_t>(in_[p_++]);
      switch (op) {
        case 0x80: take(1); break;      // PROTO
        case 0x95: take(8); break;      // FRAME: the length is advisory
        case '.': {                     // STOP
          if (stack_.empty()) fail("STOP on an empty stack");
          size_t nodes = 0;
          return to_json(stack_.back(), 0, nodes);
        }
        case 'N': push(make(Obj::kNone)); break;
        case 0x88: push_bool(true); break;   // NEWTRUE
        case 0x89: push_bool(false); break;  // NEWFALSE
        case 'J': push_int(static_cast<int32_t>(le(take(4), 4))); break;  // BININT
        case 'K': push_int(static_cast<uint8_t>(take(1)[0])); break;     // BININT1
        case 'M': push_int(static_cast<long long>(le(take(2), 2))); break;  // BININT2
        case 0x8a: push_long(static_cast<uint8_t>(take(1)[0])); break;     // LONG1
        case 0x8b: push_long(le(take(4), 4)); break;                       // LONG4
        case 'G': {                                                        // BINFLOAT (big-endian)
          const std::string_view b = take(8);
          uint64_t u = 0;
          for (char c : b) u = (u << 8) | static_cast<uint8_t>(c);
          double d;
          std::memcpy(&d, &u, sizeof d);
          Obj o = make(Obj::kFloat);
          o.f = d;
          push(std::move(o));
          break;
        }
        case 0x8c: push_str(take(static_cast<uint8_t>(take(1)[0]))); break;  // SHORT_BINUNICODE
        case 'X': push_str(take(le(take(4), 4))); break;                     // BINUNICODE
        case 0x8d: push_str(take(le(take(8), 8))); break;                    // BINUNICODE8
        case 'C': push_bytes(take(static_cast<uint8_t>(take(1)[0]))); break; // SHORT_BINBYTES
        case 'B': push_bytes(take(le(take(4), 4))); break;                   // BINBYTES
        case 0x8e: push_bytes(take(le(take(8), 8))); break;                  // BINBYTES8
        case 'U': push_str(take(static_cast<uint8_t>(take(1)[0]))); break;   // SHORT_BINSTRING
        case 'T': push_str(take(le(take(4), 4))); break;                     // BINSTRING
        case 'V': push_str(line()); break;   // UNICODE (protocol 0; raw-unicode-escape kept as is)
        case 'S': push_str(unquote(line())); break;  // STRING
        case 'I': push_text_int(line()); break;      // INT (protocol 0; "00"/"01" are booleans)
        case 'L': {                                  // LONG (protocol 0)
          std::string_view l = line();
          if (!l.empty() && l.back() == 'L') l.remove_suffix(1);
          push_text_int(l);
          break;
        }
        case 'F': {  // FLOAT (protocol 0)
          const std::string t(line());
          Obj o = make(Obj::kFloat);
          try {
            o.f = std::stod(t);
          } catch (const std::exception&) {
            fail(fmt::format("FLOAT {:?} is no number", t));
          }
          push(std::move(o));
          break;
        }
        case '}': push(make(Obj::kDict)); break;  // EMPTY_DICT
        case ']': push(make(Obj::kList)); break;  // EMPTY_LIST
        case ')': push(make(Obj::kList)); break;  // EMPTY_TUPLE
        case 0x8f: push(make(Obj::kList)); break; // EMPTY_SET
        case '(': marks_.push_back(stack_.size()); break;  // MARK
        case 0x85: tuple_of(1); break;                     // TUPLE1
        case 0x86: tuple_of(2); break;                     // TUPLE2
        case 0x87: tuple_of(3); break;                     // TUPLE3
        case 't': case 'l': case 0x91: {                   // TUPLE, LIST, FROZENSET: from the mark
          const size_t m = pop_mark();
          Obj o = make(Obj::kList);
          o.items.assign(stack_.begin() + static_cast<long>(m), stack_.end());
          stack_.resize(m);
          push(std::move(o));
          break;
        }
        case 'd': {  // DICT from the mark
          const size_t m = pop_mark();
          if ((stack_.size() - m) % 2) fail("DICT with an odd number of items");
          Obj o = make(Obj::kDict);
          o.items.assign(stack_.begin() + static_cast<long>(m), stack_.end());
          stack_.resize(m);
          push(std::move(o));
          break;
        }
        case 'a': {  // APPEND
          need(2);
          const size_t v = stack_.back();
          stack_.pop_back();
          container(stack_.back(), Obj::kList, "APPEND").items.push_back(v);
          break;
        }
        case 'e': case 0x90: {  // APPENDS, ADDITEMS
          const size_t m = pop_mark();
          if (m == 0) fail("APPENDS with no list under its mark");
          auto& items = container(stack_[m - 1], Obj::kList, "APPENDS").items;
          items.insert(items.end(), stack_.begin() + static_cast<long>(m), stack_.end());
          stack_.resize(m);
          break;
        }
        case 's': {  // SETITEM
          need(3);
          const size_t v = stack_.back();
          stack_.pop_back();
          const size_t k = stack_.back();
          stack_.pop_back();
          auto& items = container(stack_.back(), Obj::kDict, "SETITEM").items;
          items.push_back(k);
          items.push_back(v);
          break;
        }
        case 'u': {  // SETITEMS
          const size_t m = pop_mark();
          if (m == 0) fail("SETITEMS with no dict under its mark");
          if ((stack_.size() - m) % 2) fail("SETITEMS with an odd number of items");
          auto& items = container(stack_[m - 1], Obj::kDict, "SETITEMS").items;
          items.insert(items.end(), stack_.begin() + static_cast<long>(m), stack_.end());
          stack_.resize(m);
          break;
        }
        case '0': need(1); stack_.pop_back(); break;  // POP
        case '1': stack_.resize(pop_mark()); break;   // POP_MARK
        case '2': need(1); stack_.push_back(stack_.back()); break;  // DUP
        case 0x94: need(1); memo_[memo_.size()] = stack_.back(); break;  // MEMOIZE
        case 'q': need(1); memo_[static_cast<uint8_t>(take(1)[0])] = stack_.back(); break;  // BINPUT
        case 'r': need(1); memo_[le(take(4), 4)] = stack_.back(); break;                  // LONG_BINPUT
        case 'p': need(1); memo_[text_index(line())] = stack_.back(); break;              // PUT
        case 'h': get(static_cast<uint8_t>(take(1)[0])); break;  // BINGET
        case 'j': get(le(take(4), 4)); break;                     // LONG_BINGET
        case 'g': get(text_index(line())); break;                 // GET
        case 'c': case 0x93: case 'R': case 'b': case 0x81: case 0x92: case 'i': case 'o': case 'P': case 'Q':
        case 0x82: case 0x83: case 0x84:
          p_ = at;
          fail(fmt::format("opcode 0x{:02x} builds a Python object: refused (a Flight Recorder dump holds data only)",
                           op));
        default:
          p_ = at;
          fail(fmt::format("unknown opcode 0x{:02x}", op));
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(fmt::format("byte {}: {}", p_, what));
  }

  std::string_view take(uint64_t n) {
    if (n > in_.size() - p_) fail(fmt::format("truncated: {} bytes wanted, {} left", n, in_.size() - p_));
    const std::string_view v = in_.substr(p_, n);
    p_ += n;
    return v;
  }
  static uint64_t le(std::string_view b, size_t n) {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | static_cast<uint8_t>(b[k]);
    return v;
  }
  std::string_view line() {
    const size_t e = in_.find('\n', p_);
    if (e == std::string_view::npos) fail("truncated: no end of line");
    const std::string_view v = in_.substr(p_, e - p_);
    p_ = e + 1;
    return v;
  }
  std::string unquote(std::string_view s) const {
    if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front())
      return std::string(s.substr(1, s.size() - 2));
    return std::string(s);
  }
  uint64_t text_index(std::string_view s) const {
    uint64_t v = 0;
    if (s.empty() || s.size() > 18) fail("bad memo index");
    for (char c : s) {
      if (c < '0' || c > '9') fail("bad memo index");
      v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
  }

  Obj make(Obj::Kind k) const {
    Obj o;
    o.kind = k;
    return o;
  }
  void push(Obj o) {
    if (stack_.size() >= kMaxStack || arena_.size() >= kMaxStack) fail("too many objects");
    arena_.push_back(std::move(o));
    stack_.push_back(arena_.size() - 1);
  }
  void push_bool(bool b) {
    Obj o = make(Obj::kBool);
    o.b = b;
    push(std::move(o));
  }
  void push_int(long long v) {
    Obj o = make(Obj::kInt);
    o.i = v;
    push(std::move(o));
  }
  void push_long(uint64_t n) {
    const std::string_view b = take(n);
    if (n > 8) fail(fmt::format("an integer of {} bytes does not fit 64 bits", n));
    uint64_t u = le(b, n);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
    long long v;
    std::memcpy(&v, &u, sizeof v);
    push_int(v);
  }
  void push_text_int(std::string_view s) {
    if (s == "00" || s == "01") return push_bool(s == "01");
    const std::string t(s);
    try {
      size_t used = 0;
      const long long v = std::stoll(t, &used);
      if (used != t.size()) throw std::invalid_argument(t);
      push_int(v);
    } catch (const std::exception&) {
      fail(fmt::format("INT {:?} is no 64-bit integer", t));
    }
  }
  void push_str(std::string_view s) {
    Obj o = make(Obj::kStr);
    o.s = std::string(s);
    push(std::move(o));
  }
  void push_bytes(std::string_view b) { push_str(fmt::format("<{} bytes>", b.size())); }

  void need(size_t n) const {
    if (stack_.size() < n || (!marks_.empty() && stack_.size() - marks_.back() < n)) fail("stack underflow");
  }
  size_t pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  void tuple_of(size_t n) {
    need(n);
    Obj o = make(Obj::kList);
    o.items.assign(stack_.end() - static_cast<long>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    push(std::move(o));
  }
  Obj& container(size_t idx, Obj::Kind k, const char* op) {
    Obj& o = arena_[idx];
    if (o.kind != k) fail(fmt::format("{} onto a {}", op, k == Obj::kList ? "non-list" : "non-dict"));
    return o;
  }
  void get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(fmt::format("memo {} was never stored", key));
    if (stack_.size() >= kMaxStack) fail("too many objects");
    stack_.push_back(it->second);
  }

  nlohmann::json to_json(size_t idx, size_t depth, size_t& nodes) const {
    if (depth > kMaxDepth) throw std::runtime_error(fmt::format("nesting deeper than {}", kMaxDepth));
    if (++nodes > kMaxNodes) throw std::runtime_error(fmt::format("more than {} values", kMaxNodes));
    const Obj& o = arena_[idx];
    switch (o.kind) {
      case Obj::kNone: return nullptr;
      case Obj::kBool: return o.b;
      case Obj::kInt: return o.i;
      case Obj::kFloat: return o.f;
      case Obj::kStr: return o.s;
      case Obj::kList: {
        nlohmann::json a = nlohmann::json::array();
        for (size_t x : o.items) a.push_back(to_json(x, depth + 1, nodes));
        return a;
      }
      case Obj::kDict: {
        nlohmann::json d = nlohmann::json::object();
        for (size_t k = 0; k + 1 < o.items.size(); k += 2) {
          const Obj& key = arena_[o.items[k]];
          std::string name = key.kind == Obj::kStr ? key.s : to_json(o.items[k], depth + 1, nodes).dump();
          d[name] = to_json(o.items[k + 1], depth + 1, nodes);
        }
        return d;
      }
    }
    return nullptr;
  }

  std::string_view in_;
  size_t p_ = 0;
  std::vector<Obj> arena_;
  std::vector<size_t> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, size_t> memo_;
};

}  // namespace

nlohmann::json read_pickle(std::string_view bytes) { return Reader(bytes).run(); }

}  // namespace hanglab::fr
