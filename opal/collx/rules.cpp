// Tuning rules: reader (JSON with line numbers), validation, matching,
// writer, and the C API of collx/collx_rules.h.
//
// nlohmann::json does not keep positions, so the file is parsed with its SAX
// interface over an iterator that counts the bytes the lexer has consumed:
// at each SAX event the last non-blank byte consumed is the last byte of the
// token just read (a '{' or '[', a string's closing quote -- JSON strings
// cannot span lines --, a literal, or the character just after a number),
// which gives the line of every value.  The builder keeps them in a map from
// JSON pointer to line, and validation reports "name:line: problem".
#include "rules.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "collx/collx.h"
#include "collx/collx_rules.h"

namespace collx {

namespace {

using ojson = nlohmann::ordered_json;

// the collectives' names: the core's one table (collx.h)
const std::vector<const char *> &collective_names() {
    static const std::vector<const char *> names(collx_coll_names(),
                                                 collx_coll_names() + COLLX_COLL_COUNT);
    return names;
}

constexpr const char *kTopKeys[] = {"format", "version", "comment", "generated_by", "rules"};
constexpr const char *kRuleKeys[] = {"collective", "nodes",     "ranks_per_node",
                                     "bytes",      "algorithm", "segment_bytes",
                                     "low",        "up",        "low_algorithm",
                                     "up_algorithm", "comment"};

constexpr const char *kFormat = "collx-tuning";
constexpr int kVersion = 1;
constexpr std::size_t kMaxDepth = 64;  // a valid file nests 3 deep

// what a level's algorithm may be: the submodule's ("module") or a collx tree
const std::vector<const char *> &level_algorithms() {
    static const std::vector<const char *> names = [] {
        std::vector<const char *> v{"module"};
        for (int k = 0; k < COLLX_TREE_COUNT; ++k) v.push_back(collx_tree_name(k));
        return v;
    }();
    return names;
}

bool level_algorithm_known(const std::string &a) {
    return a == "module" || collx_tree_from_name(a.c_str()) >= 0;
}

int collective_index(std::string_view name) {
    return collx_coll_from_name(std::string(name).c_str());
}

std::string quote(std::string_view s) {
    // JSON string syntax: the user sees exactly what to write.
    return ojson(std::string(s)).dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// A value as it appears in a message: scalars verbatim, containers shortened.
std::string show(const ojson &v) {
    std::string s = v.dump(-1, ' ', false, ojson::error_handler_t::replace);
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diag = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
            diag = up;
        }
    }
    return row[b.size()];
}

template <class Names>
std::string join(const Names &names) {
    std::string s;
    for (const auto &n : names) {
        if (n == nullptr) break;
        if (!s.empty()) s += ", ";
        s += n;
    }
    return s;
}

// '; did you mean "x"?' for the closest candidate within a third of the
// word's length in edits (at least 1), else "".
template <class Names>
std::string suggestion(std::string_view got, const Names &names) {
    const char *best = nullptr;
    std::size_t best_d = std::max<std::size_t>(1, got.size() / 3) + 1;
    for (const char *n : names) {
        if (n == nullptr) break;
        std::size_t d = edit_distance(got, n);
        if (d < best_d) best_d = d, best = n;
    }
    return best ? "; did you mean " + quote(best) + "?" : std::string();
}

std::string where(const std::string &name, int line) {
    std::string w = name.empty() ? std::string("<rules>") : name;
    if (line > 0) w += ":" + std::to_string(line);
    return w;
}

// ------------------------------------------------------------ positions

class LineMap {
public:
    explicit LineMap(std::string_view text) {
        starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') starts_.push_back(i + 1);
    }
    // 1-based line / column of byte `off` (off == size: end of input).
    int line(std::size_t off) const {
        return static_cast<int>(std::upper_bound(starts_.begin(), starts_.end(), off) -
                                starts_.begin());
    }
    int column(std::size_t off) const {
        return static_cast<int>(off - starts_[static_cast<std::size_t>(line(off)) - 1] + 1);
    }

private:
    std::vector<std::size_t> starts_;
};

// A char iterator that publishes how far the lexer has read.
struct CountingIter {
    using iterator_category = std::forward_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char *;
    using reference = const char &;

    const char *p;
    const char *base;
    std::size_t *consumed;

    reference operator*() const { return *p; }
    CountingIter &operator++() {
        ++p;
        *consumed = static_cast<std::size_t>(p - base);
        return *this;
    }
    CountingIter operator++(int) {
        CountingIter old = *this;
        ++*this;
        return old;
    }
    bool operator==(const CountingIter &o) const { return p == o.p; }
    bool operator!=(const CountingIter &o) const { return p != o.p; }
};

std::string pointer_token(std::string_view key) {
    std::string s;
    for (char c : key) {
        if (c == '~')
            s += "~0";
        else if (c == '/')
            s += "~1";
        else
            s += c;
    }
    return s;
}

// "rule K: " when `path` lies inside /rules/<i> (K = i + 1), else "".
std::string rule_context(const std::string &path) {
    static const std::string prefix = "/rules/";
    if (path.compare(0, prefix.size(), prefix) != 0) return {};
    std::size_t end = path.find('/', prefix.size());
    std::string idx =
        path.substr(prefix.size(), end == std::string::npos ? end : end - prefix.size());
    if (idx.empty() || idx.size() > 18 || idx.find_first_not_of("0123456789") != std::string::npos)
        return {};
    return "rule " + std::to_string(std::stoull(idx) + 1) + ": ";
}

// Builds the document (ordered_json) and the line of every value.
class Builder final : public nlohmann::json_sax<ojson> {
public:
    Builder(std::string_view text, const LineMap &lines, const std::size_t &consumed,
            const std::string &name)
        : text_(text), lines_(lines), consumed_(consumed), name_(name) {}

    ojson root;
    std::unordered_map<std::string, int> line_of;  // JSON pointer -> line where the value starts
    std::string error;                             // set when the builder stopped the parse
    bool syntax_error = false;
    std::size_t error_pos = 0;
    std::string error_text;

    bool null() override { return put(nullptr); }
    bool boolean(bool v) override { return put(v); }
    bool number_integer(number_integer_t v) override { return put(v); }
    bool number_unsigned(number_unsigned_t v) override { return put(v); }
    bool number_float(number_float_t v, const string_t &) override { return put(v); }
    bool string(string_t &v) override { return put(std::move(v)); }
    bool binary(binary_t &v) override { return put(ojson::binary(std::move(v))); }
    bool start_object(std::size_t) override { return open(ojson::object()); }
    bool start_array(std::size_t) override { return open(ojson::array()); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t &k) override {
        Frame &f = stack_.back();
        const int line = here();
        auto [it, fresh] = f.keys.emplace(k, line);
        if (!fresh) {
            error = where(name_, line) + ": " + rule_context(f.path) + "duplicate key " + quote(k) +
                    " (first given on line " + std::to_string(it->second) + ")";
            return false;
        }
        f.key = std::move(k);
        return true;
    }

    bool parse_error(std::size_t pos, const std::string &,
                     const nlohmann::detail::exception &ex) override {
        syntax_error = true;
        error_pos = pos;
        error_text = ex.what();
        return false;
    }

private:
    struct Frame {
        ojson value;
        std::string path;
        std::string key;                            // objects: the key of the next value
        std::unordered_map<std::string, int> keys;  // objects: key -> line, for duplicates
        std::size_t next = 0;                       // arrays: index of the next element
    };

    // Line of the token just read: the last non-blank byte consumed.  (After
    // a number the lexer has also read the byte that ends it, possibly a
    // newline, which still counts on the number's line; blanks are skipped
    // in case a lexer reads further ahead.)
    int here() const {
        std::size_t off = consumed_ ? consumed_ - 1 : 0;
        while (
            off > 0 && off < text_.size() &&
            (text_[off] == ' ' || text_[off] == '\t' || text_[off] == '\n' || text_[off] == '\r'))
            --off;
        return lines_.line(off);
    }

    std::string child_path() {
        if (stack_.empty()) return std::string();
        Frame &f = stack_.back();
        if (f.value.is_object()) return f.path + "/" + pointer_token(f.key);
        return f.path + "/" + std::to_string(f.next++);
    }

    void attach(ojson v) {
        if (stack_.empty()) {
            root = std::move(v);
            return;
        }
        Frame &f = stack_.back();
        if (f.value.is_object())
            // key() rejected duplicates: append without ordered_map's linear search
            f.value.get_ref<ojson::object_t &>().emplace_back(f.key, std::move(v));
        else
            f.value.get_ref<ojson::array_t &>().push_back(std::move(v));
    }

    bool put(ojson v) {
        line_of[child_path()] = here();
        attach(std::move(v));
        return true;
    }

    bool open(ojson container) {
        const int line = here();
        if (stack_.size() >= kMaxDepth) {
            error = where(name_, line) + ": nested more than " + std::to_string(kMaxDepth) +
                    " levels deep";
            return false;
        }
        std::string path = child_path();
        line_of[path] = line;
        stack_.push_back(Frame{std::move(container), std::move(path), {}, {}, 0});
        return true;
    }

    bool close() {
        ojson v = std::move(stack_.back().value);
        stack_.pop_back();
        attach(std::move(v));
        return true;
    }

    std::string_view text_;
    const LineMap &lines_;
    const std::size_t &consumed_;
    const std::string &name_;
    std::vector<Frame> stack_;
};

// --------------------------------------------------------------- validation

class Validator {
public:
    Validator(const std::string &name, const std::unordered_map<std::string, int> &lines)
        : name_(name), lines_(lines) {}

    int line(const std::string &path) const {
        auto it = lines_.find(path);
        return it == lines_.end() ? 0 : it->second;
    }

    [[noreturn]] void fail(const std::string &path, const std::string &msg) const {
        throw RulesError(where(name_, line(path)) + ": " + rule_context(path) + msg);
    }

    template <class Keys>
    void check_keys(const ojson &obj, const std::string &path, const Keys &allowed) const {
        for (const auto &item : obj.items()) {
            bool ok = false;
            for (const char *a : allowed) ok = ok || item.key() == a;
            if (!ok)
                fail(path + "/" + pointer_token(item.key()),
                     "unknown key " + quote(item.key()) + " (allowed: " + join(allowed) + ")" +
                         suggestion(item.key(), allowed));
        }
    }

    // One end of a range (`what` = "min"/"max"), or the exact value (nullptr).
    std::uint64_t bound(const ojson &v, const std::string &path, const std::string &key,
                        const char *what) const {
        const std::string label = quote(key) + (what ? std::string(" ") + what : std::string());
        if (v.is_number_integer()) {
            if (v.is_number_unsigned()) return v.get<std::uint64_t>();
            if (v.get<std::int64_t>() >= 0)
                return static_cast<std::uint64_t>(v.get<std::int64_t>());
            fail(path, label + " must not be negative, got " + show(v));
        }
        fail(path, label + " must be an integer >= 0, got " + show(v));
    }

    RuleRange range(const ojson &v, const std::string &path, const std::string &key) const {
        if (v.is_number_integer()) return RuleRange::exactly(bound(v, path, key, nullptr));
        if (!v.is_array() || v.size() != 2)
            fail(path, quote(key) +
                           " must be an integer >= 0 or [min, max] (max an integer or null), got " +
                           show(v));
        RuleRange r;
        r.min = bound(v[0], path + "/0", key, "min");
        if (!v[1].is_null()) {
            r.max = bound(v[1], path + "/1", key, "max");
            if (r.min > *r.max)
                fail(path, quote(key) + ": min " + std::to_string(r.min) + " > max " +
                               std::to_string(*r.max));
        }
        return r;
    }

    std::string text(const ojson &v, const std::string &path, const std::string &key,
                     bool allow_empty) const {
        if (!v.is_string() || (!allow_empty && v.get_ref<const std::string &>().empty()))
            fail(path, quote(key) + " must be a " + (allow_empty ? "" : "non-empty ") +
                           "string, got " + show(v));
        return v.get<std::string>();
    }

    Rule rule(const ojson &v, const std::string &path) const {
        if (!v.is_object()) fail(path, "must be an object, got " + show(v));
        check_keys(v, path, kRuleKeys);
        Rule r;
        r.line = line(path);
        auto c = v.find("collective");
        if (c == v.end())
            fail(path, "\"collective\" is missing (one of: " + join(collective_names()) + ")");
        r.collective = text(*c, path + "/collective", "collective", false);
        if (collective_index(r.collective) < 0)
            fail(path + "/collective", "unknown collective " + quote(r.collective) +
                                           " (known: " + join(collective_names()) + ")" +
                                           suggestion(r.collective, collective_names()));
        for (const auto &item : v.items()) {
            const std::string &k = item.key();
            const std::string p = path + "/" + pointer_token(k);
            const ojson &x = item.value();
            if (k == "nodes")
                r.nodes = range(x, p, k);
            else if (k == "ranks_per_node")
                r.ranks_per_node = range(x, p, k);
            else if (k == "bytes")
                r.bytes = range(x, p, k);
            else if (k == "algorithm") {
                r.algorithm = text(x, p, k, false);
                r.algorithm_line = line(p);
            } else if (k == "low")
                r.low = text(x, p, k, false);
            else if (k == "up")
                r.up = text(x, p, k, false);
            else if (k == "low_algorithm" || k == "up_algorithm") {
                std::string a = text(x, p, k, false);
                if (!level_algorithm_known(a))
                    fail(p, "unknown " + k + " " + quote(a) + " (known: " +
                                join(level_algorithms()) + ")" +
                                suggestion(a, level_algorithms()));
                (k == "low_algorithm" ? r.low_algorithm : r.up_algorithm) = std::move(a);
            }
            else if (k == "comment")
                r.comment = text(x, p, k, true);
            else if (k == "segment_bytes") {
                if (!x.is_number_integer() ||
                    (!x.is_number_unsigned() && x.get<std::int64_t>() < 0))
                    fail(p, "\"segment_bytes\" must be an integer >= 0, got " + show(x));
                if (x.is_number_unsigned() &&
                    x.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
                    fail(p, "\"segment_bytes\" is too large, got " + show(x));
                r.segment_bytes = x.get<std::int64_t>();
            }
        }
        return r;
    }

    void top(const ojson &doc, Rules &out) const {
        if (!doc.is_object())
            fail(
                "",
                "the top level must be an object with \"format\", \"version\" and \"rules\", got " +
                    show(doc));
        check_keys(doc, "", kTopKeys);
        auto f = doc.find("format");
        if (f == doc.end()) fail("", "\"format\" is missing (expected " + quote(kFormat) + ")");
        if (!f->is_string() || f->get_ref<const std::string &>() != kFormat)
            fail("/format", "\"format\" must be " + quote(kFormat) + ", got " + show(*f));
        auto ver = doc.find("version");
        if (ver == doc.end()) fail("", "\"version\" is missing (this reader knows version 1)");
        if (!ver->is_number_integer() || ver->get<std::int64_t>() != kVersion)
            fail("/version",
                 "\"version\" must be 1 (the only version this reader knows), got " + show(*ver));
        if (auto c = doc.find("comment"); c != doc.end())
            out.comment = text(*c, "/comment", "comment", true);
        if (auto g = doc.find("generated_by"); g != doc.end())
            out.generated_by = text(*g, "/generated_by", "generated_by", true);
        auto rules = doc.find("rules");
        if (rules == doc.end()) fail("", "\"rules\" is missing (an array of rules)");
        if (!rules->is_array()) fail("/rules", "\"rules\" must be an array, got " + show(*rules));
        for (std::size_t i = 0; i < rules->size(); ++i)
            out.add(rule((*rules)[i], "/rules/" + std::to_string(i)));
    }

private:
    const std::string &name_;
    const std::unordered_map<std::string, int> &lines_;
};

ojson range_json(const RuleRange &r) {
    if (r.max && *r.max == r.min) return r.min;
    return ojson::array({ojson(r.min), r.max ? ojson(*r.max) : ojson(nullptr)});
}

std::string errno_text(int e) { return std::generic_category().message(e); }

}  // namespace

// ----------------------------------------------------------------- public

const std::vector<std::string> &rule_collectives() {
    static const std::vector<std::string> names(collective_names().begin(),
                                                collective_names().end());
    return names;
}

bool is_rule_collective(std::string_view name) { return collective_index(name) >= 0; }

bool Rule::matches(std::string_view coll, long long n_nodes, long long n_ranks_per_node,
                   unsigned long long n_bytes) const {
    auto in = [](const std::optional<RuleRange> &r, long long v) {
        return !r || (v >= 0 && r->contains(static_cast<std::uint64_t>(v)));
    };
    return coll == collective && in(nodes, n_nodes) && in(ranks_per_node, n_ranks_per_node) &&
           (!bytes || bytes->contains(n_bytes));
}

void Rules::add(Rule rule) {
    const std::string ctx =
        where(name_, rule.line) + ": rule " + std::to_string(rules_.size() + 1) + ": ";
    const int c = collective_index(rule.collective);
    if (c < 0)
        throw RulesError(ctx + "unknown collective " + quote(rule.collective) +
                         " (known: " + join(collective_names()) + ")");
    for (auto [r, key] :
         {std::pair{&rule.nodes, "nodes"}, std::pair{&rule.ranks_per_node, "ranks_per_node"},
          std::pair{&rule.bytes, "bytes"}})
        if (*r && (*r)->max && (*r)->min > *(*r)->max)
            throw RulesError(ctx + quote(key) + ": min " + std::to_string((*r)->min) + " > max " +
                             std::to_string(*(*r)->max));
    for (auto [s, key] : {std::pair{&rule.algorithm, "algorithm"}, std::pair{&rule.low, "low"},
                          std::pair{&rule.up, "up"}})
        if (*s && (*s)->empty()) throw RulesError(ctx + quote(key) + " must be a non-empty string");
    for (auto [s, key] : {std::pair{&rule.low_algorithm, "low_algorithm"},
                          std::pair{&rule.up_algorithm, "up_algorithm"}})
        if (*s && !level_algorithm_known(**s))
            throw RulesError(ctx + "unknown " + key + " " + quote(**s) + " (known: " +
                             join(level_algorithms()) + ")");
    if (rule.segment_bytes && *rule.segment_bytes < 0)
        throw RulesError(ctx + "\"segment_bytes\" must be >= 0, got " +
                         std::to_string(*rule.segment_bytes));
    if (by_collective_.empty()) by_collective_.resize(COLLX_COLL_COUNT);
    by_collective_[static_cast<std::size_t>(c)].push_back(rules_.size());
    rules_.push_back(std::move(rule));
}

std::optional<std::size_t> Rules::find(std::string_view collective, long long nodes,
                                       long long ranks_per_node, unsigned long long bytes) const {
    const int c = collective_index(collective);
    if (c < 0 || by_collective_.empty()) return std::nullopt;
    for (std::size_t i : by_collective_[static_cast<std::size_t>(c)])
        if (rules_[i].matches(collective, nodes, ranks_per_node, bytes)) return i;
    return std::nullopt;
}

const Rule *Rules::lookup(std::string_view collective, long long nodes, long long ranks_per_node,
                          unsigned long long bytes) const {
    auto i = find(collective, nodes, ranks_per_node, bytes);
    return i ? &rules_[*i] : nullptr;
}

std::string Rules::check_algorithms(std::string_view collective,
                                    const std::vector<std::string> &known) const {
    if (!is_rule_collective(collective))
        return where(name_, 0) + ": unknown collective " + quote(collective);
    for (std::size_t i = 0; i < rules_.size(); ++i) {
        const Rule &r = rules_[i];
        if (r.collective != collective || !r.algorithm) continue;
        if (std::find(known.begin(), known.end(), *r.algorithm) != known.end()) continue;
        std::string list;
        for (const auto &k : known) list += (list.empty() ? "" : ", ") + k;
        return where(name_, r.algorithm_line ? r.algorithm_line : r.line) + ": rule " +
               std::to_string(i + 1) + ": unknown algorithm " + quote(*r.algorithm) + " for " +
               std::string(collective) + " (known: " + (list.empty() ? "none" : list) + ")";
    }
    return {};
}

Rules Rules::parse(std::string_view text, const std::string &name) {
    const LineMap lines(text);
    std::size_t consumed = 0;
    Builder b(text, lines, consumed, name);
    CountingIter first{text.data(), text.data(), &consumed};
    CountingIter last{text.data() + text.size(), text.data(), &consumed};
    if (!ojson::sax_parse(first, last, &b)) {
        if (!b.syntax_error) throw RulesError(b.error);
        // nlohmann counts the offending byte (or end of input) as read.
        const std::size_t off = std::min(b.error_pos ? b.error_pos - 1 : 0, text.size());
        std::string detail = b.error_text;
        if (auto col = detail.find(", column "); col != std::string::npos) {
            if (auto colon = detail.find(": ", col); colon != std::string::npos)
                detail = detail.substr(colon + 2);
        }
        // the parser quotes what it read: binary garbage must not reach the
        // user's terminal as raw bytes
        std::string shown;
        for (unsigned char ch : detail) {
            if (shown.size() >= 160) {
                shown += "...";
                break;
            }
            if (ch >= 0x20 && ch < 0x7f) {
                shown += static_cast<char>(ch);
            } else {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02x", ch);
                shown += hex;
            }
        }
        throw RulesError(where(name, lines.line(off)) + ":" + std::to_string(lines.column(off)) +
                         ": JSON syntax error: " + shown);
    }
    Rules out(name);
    Validator(name, b.line_of).top(b.root, out);
    return out;
}

Rules Rules::load(const std::string &path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> f(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
    if (!f) throw RulesError(where(path, 0) + ": cannot open: " + errno_text(errno));
    std::string text;
    char buf[65536];
    for (;;) {
        std::size_t n = std::fread(buf, 1, sizeof buf, f.get());
        text.append(buf, n);
        if (n < sizeof buf) {
            if (std::ferror(f.get()))
                throw RulesError(where(path, 0) + ": cannot read: " + errno_text(errno));
            break;
        }
    }
    return parse(text, path);
}

ojson Rules::to_json() const {
    ojson doc = ojson::object();
    doc["format"] = kFormat;
    doc["version"] = kVersion;
    if (comment) doc["comment"] = *comment;
    if (generated_by) doc["generated_by"] = *generated_by;
    ojson list = ojson::array();
    for (const Rule &r : rules_) {
        ojson j = ojson::object();
        j["collective"] = r.collective;
        if (r.nodes) j["nodes"] = range_json(*r.nodes);
        if (r.ranks_per_node) j["ranks_per_node"] = range_json(*r.ranks_per_node);
        if (r.bytes) j["bytes"] = range_json(*r.bytes);
        if (r.algorithm) j["algorithm"] = *r.algorithm;
        if (r.segment_bytes) j["segment_bytes"] = *r.segment_bytes;
        if (r.low) j["low"] = *r.low;
        if (r.up) j["up"] = *r.up;
        if (r.low_algorithm) j["low_algorithm"] = *r.low_algorithm;
        if (r.up_algorithm) j["up_algorithm"] = *r.up_algorithm;
        if (r.comment) j["comment"] = *r.comment;
        list.push_back(std::move(j));
    }
    doc["rules"] = std::move(list);
    return doc;
}

std::string Rules::to_string() const {
    return to_json().dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

void Rules::save(const std::string &path) const {
    const std::string text = to_string();
    static std::atomic<unsigned> counter{0};
    std::string tmp;
    int fd = -1;
    for (int tries = 0; fd < 0 && tries < 100; ++tries) {
        tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
        fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0)
        throw RulesError(where(path, 0) + ": cannot create " + tmp + ": " + errno_text(errno));
    auto failed = [&](const char *what) {
        const int e = errno;
        if (fd >= 0) ::close(fd);
        ::unlink(tmp.c_str());
        throw RulesError(where(path, 0) + ": cannot " + what + " " + tmp + ": " + errno_text(e));
    };
    for (std::size_t done = 0; done < text.size();) {
        ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) errno = EIO;
        if (n <= 0) failed("write");
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0) failed("sync");
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0) failed("close");
    if (::rename(tmp.c_str(), path.c_str()) != 0) failed("rename into place");
    // make the new name durable too (best effort: the file itself is complete)
    const std::string::size_type slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : path.substr(0, slash);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)::fsync(dfd);
        ::close(dfd);
    }
}

}  // namespace collx

// ------------------------------------------------------------------ C API

struct collx_rules {
    collx::Rules rules;
};

namespace {

void set_err(char *err, std::size_t errlen, const char *msg) {
    if (err == nullptr || errlen == 0) return;
    std::snprintf(err, errlen, "%s", msg);
}

template <class Make>
collx_rules_t *make_rules(const char *name, char *err, std::size_t errlen, Make make) {
    set_err(err, errlen, "");
    try {
        return new collx_rules{make()};
    } catch (const std::bad_alloc &) {
        // no allocation here: the message goes straight into the caller's buffer
        if (err && errlen)
            std::snprintf(err, errlen, "%s: out of memory reading tuning rules", name);
    } catch (const std::exception &e) {
        set_err(err, errlen, e.what());
    } catch (...) {
        if (err && errlen)
            std::snprintf(err, errlen, "%s: unknown error reading tuning rules", name);
    }
    return nullptr;
}

}  // namespace

extern "C" {

collx_rules_t *collx_rules_load(const char *path, char *err, size_t errlen) {
    if (path == nullptr) {
        set_err(err, errlen, "tuning rules: no file name given");
        return nullptr;
    }
    return make_rules(path, err, errlen, [&] { return collx::Rules::load(path); });
}

collx_rules_t *collx_rules_parse(const char *text, const char *name, char *err, size_t errlen) {
    if (name == nullptr) name = "<string>";
    if (text == nullptr) {
        if (err && errlen) std::snprintf(err, errlen, "%s: no text given", name);
        return nullptr;
    }
    return make_rules(name, err, errlen, [&] { return collx::Rules::parse(text, name); });
}

int collx_rules_lookup(const collx_rules_t *r, const char *collective, long long nodes,
                       long long ranks_per_node, unsigned long long bytes, collx_rule_t *out) {
    collx_rule_t res{0, -1, 0, nullptr, -1, nullptr, nullptr, nullptr, nullptr};
    if (r != nullptr && collective != nullptr) {
        // find() does not allocate or throw
        if (auto i = r->rules.find(collective, nodes, ranks_per_node, bytes)) {
            const collx::Rule &rule = r->rules[*i];
            res.found = 1;
            res.index = static_cast<int>(*i);
            res.line = rule.line;
            res.algorithm = rule.algorithm ? rule.algorithm->c_str() : nullptr;
            res.segment_bytes = rule.segment_bytes ? *rule.segment_bytes : -1;
            res.low = rule.low ? rule.low->c_str() : nullptr;
            res.up = rule.up ? rule.up->c_str() : nullptr;
            res.low_algorithm = rule.low_algorithm ? rule.low_algorithm->c_str() : nullptr;
            res.up_algorithm = rule.up_algorithm ? rule.up_algorithm->c_str() : nullptr;
        }
    }
    if (out != nullptr) *out = res;
    return res.found;
}

size_t collx_rules_count(const collx_rules_t *r) { return r ? r->rules.size() : 0; }

const char *collx_rules_name(const collx_rules_t *r) { return r ? r->rules.name().c_str() : ""; }

int collx_rules_check_algorithms(const collx_rules_t *r, const char *collective,
                                 const char *const *known, size_t nknown, char *err,
                                 size_t errlen) {
    set_err(err, errlen, "");
    if (r == nullptr || collective == nullptr) {
        set_err(err, errlen, "tuning rules: no rules or no collective given");
        return -1;
    }
    try {
        std::vector<std::string> names;
        for (size_t i = 0; i < nknown; ++i)
            if (known && known[i]) names.emplace_back(known[i]);
        std::string msg = r->rules.check_algorithms(collective, names);
        if (msg.empty()) return 0;
        set_err(err, errlen, msg.c_str());
        return 1;
    } catch (...) {
        if (err && errlen)
            std::snprintf(err, errlen, "%s: out of memory checking algorithms",
                          r->rules.name().c_str());
        return -1;
    }
}

void collx_rules_free(collx_rules_t *r) { delete r; }

}  // extern "C"
