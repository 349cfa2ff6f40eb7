// The measured machines hanx keeps between runs (coll_hanx_model_cache,
// collx.h): one text line per machine, keyed by its nodes, so that every
// run on the same nodes takes the first run's measurement and chooses, and
// reduces, alike.  The file's format is in docs/mca-parameters.md.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>
#include <filesystem>

#include "collx/collx.h"

namespace {

constexpr std::uint64_t kFnvOffset = 1469598103934665603ULL;
constexpr std::uint64_t kFnvPrime = 1099511628211ULL;

std::uint64_t fnv(std::uint64_t h, const void *data, std::size_t n) {
    const auto *b = static_cast<const unsigned char *>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
    return h;
}

constexpr const char *kHeader =
    "# collx machines (coll_hanx_model_cache, docs/mca-parameters.md): key, shape, "
    "then hanx's measurement";

// One machine's line: its key and the rest as written (the shape and the
// values), or nothing for a line that is not a well-formed machine of n
// values.
struct Line {
    std::uint64_t key = 0;
    std::string text;
};

bool parse(const std::string &text, int n, std::uint64_t *key, double *values) {
    std::istringstream in(text);
    std::string k, shape;
    if (!(in >> k >> shape) || k.size() != 16) return false;
    char *end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(k.c_str(), &end, 16);
    if (errno != 0 || end != k.c_str() + k.size() || v == 0) return false;
    for (int i = 0; i < n; ++i) {
        std::string word;
        if (!(in >> word)) return false;
        end = nullptr;
        const double d = std::strtod(word.c_str(), &end);
        if (end != word.c_str() + word.size()) return false;
        if (values) values[i] = d;
    }
    std::string extra;
    if (in >> extra) return false;
    *key = v;
    return true;
}

std::vector<Line> read_lines(const char *path, int n) {
    std::vector<Line> lines;
    std::ifstream in(path);
    std::string text;
    while (std::getline(in, text)) {
        Line l;
        if (!text.empty() && text[0] != '#' && parse(text, n, &l.key, nullptr)) {
            l.text = text;
            lines.push_back(std::move(l));
        }
    }
    return lines;
}

}  // namespace

extern "C" {

uint64_t collx_digest(const void *data, size_t n) { return fnv(kFnvOffset, data, n); }

uint64_t collx_host_digest(const char *name) {
    const std::uint64_t h = collx_digest(name, name ? std::strlen(name) : 0);
    return h ? h : 1;
}

// (splitmix64's finaliser: every bit of x moves about half of the result's)
static std::uint64_t mix(std::uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t collx_machine_node_term(uint64_t host_digest, int node_size) {
    return mix(host_digest ^ mix(static_cast<std::uint64_t>(static_cast<unsigned>(node_size))));
}

uint64_t collx_machine_key(uint64_t sum_of_terms, int nnodes, uint64_t measured_by) {
    const std::uint64_t k =
        mix(sum_of_terms ^ mix(~static_cast<std::uint64_t>(nnodes) ^ mix(measured_by)));
    return k ? k : 1;
}

int collx_machine_cache_default(char *out, size_t size) {
    if (out == nullptr || size == 0) return -1;
    out[0] = '\0';
    std::string path;
    const char *xdg = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    if (xdg != nullptr && xdg[0] == '/') path = std::string(xdg) + "/collx/machines";
    else if (home != nullptr && home[0] == '/') path = std::string(home) + "/.cache/collx/machines";
    else return -1;
    if (path.size() >= size) return -1;
    std::memcpy(out, path.c_str(), path.size() + 1);
    return 0;
}

int collx_machine_cache_find(const char *path, uint64_t key, double *values, int n) {
    if (path == nullptr || values == nullptr || n <= 0) return 0;
    const std::vector<Line> lines = read_lines(path, n);
    // (the last line of the key counts)
    const auto it = std::find_if(lines.rbegin(), lines.rend(),
                                 [key](const Line &l) { return l.key == key; });
    std::uint64_t k = 0;
    return it != lines.rend() && parse(it->text, n, &k, values) ? 1 : 0;
}

int collx_machine_cache_keep(const char *path, uint64_t key, const char *shape,
                             const double *values, int n, char *err, size_t err_size) {
    auto fail = [&](const std::string &why) {
        if (err != nullptr && err_size > 0) std::snprintf(err, err_size, "%s", why.c_str());
        return -1;
    };
    if (path == nullptr || path[0] == '\0' || values == nullptr || n <= 0)
        return fail("no file");
    std::string name = shape != nullptr && shape[0] != '\0' ? shape : "-";
    for (char &c : name)
        if (c == ' ' || c == '\t' || c == '\n' || c == '#') c = '_';
    std::vector<Line> lines = read_lines(path, n);
    lines.erase(std::remove_if(lines.begin(), lines.end(),
                               [key](const Line &l) { return l.key == key; }),
                lines.end());
    if (lines.size() >= COLLX_MACHINE_CACHE_LINES)
        lines.erase(lines.begin(), lines.end() - (COLLX_MACHINE_CACHE_LINES - 1));
    char head[64];
    std::snprintf(head, sizeof(head), "%016" PRIx64 " ", key);
    std::string mine = head + name;
    for (int i = 0; i < n; ++i) {
        char v[40];
        std::snprintf(v, sizeof(v), " %.17g", values[i]);
        mine += v;
    }
    lines.push_back(Line{key, mine});

    const std::filesystem::path file(path);
    std::error_code ec;
    if (file.has_parent_path()) {
        std::filesystem::create_directories(file.parent_path(), ec);
        if (ec) return fail("cannot make " + file.parent_path().string() + ": " + ec.message());
    }
    // a new file renamed over the old one: a reader sees the old lines or
    // the new ones, never half of them
    // (its name this process's and this call's: threads may keep at once)
    static std::atomic<unsigned> calls{0};
    const std::string tmp = std::string(path) + ".tmp." + std::to_string(::getpid()) + "." +
                            std::to_string(calls.fetch_add(1));
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (!out) return fail("cannot write " + tmp + ": " + std::strerror(errno));
        out << kHeader << '\n';
        for (const Line &l : lines) out << l.text << '\n';
        out.flush();
        if (!out) {
            std::filesystem::remove(tmp, ec);
            return fail("cannot write " + tmp);
        }
    }
    std::filesystem::rename(tmp, file, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        return fail("cannot replace " + std::string(path) + ": " + ec.message());
    }
    return 0;
}

}  // extern "C"
