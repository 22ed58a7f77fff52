// The query language of runquery.h: a lexer and a recursive-descent parser that resolve every field once, at parse
// time, to where it lives in a RunRecord (a member, a summary, a config key) and compile every regular expression
// once, so that matching walks a small tree with a map look-up or two per condition and allocates nothing (only a '~'
// whose pattern is more than plain text allocates, inside std::regex).
// Rules it keeps: parse and matches never throw (a refused query is a QueryError naming the byte offset and what was
// expected there; a regular expression that gives up while matching is a non-match); nesting is bounded, so no
// text can exhaust the stack; a field a run lacks makes its condition false (SQL's NULL), so `not (x == 3)` holds
// for a run without x.
#include "runquery.h"

#include "runfield.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <regex>
#include <utility>

namespace traindeck {

namespace {

// Parentheses and 'not' nest at most this deep: the parser and the matcher recurse once per level.
constexpr int kMaxNesting = 100;
// Longer patterns only make libstdc++'s regex compiler and its recursive matcher slower to give up.
constexpr size_t kMaxPatternBytes = 1000;

enum class Builtin { id, name, state, reason, backend, note, progress, spend, created, started, finished, duration };
enum class Stat { best, last, min, max, count, last_step };
enum class FieldKind { builtin, summary, config };
enum class Op { eq, ne, lt, le, gt, ge };
enum class Prefix { tag, state, backend, archived, starred, unknown };

struct Field {
    FieldKind kind = FieldKind::config;
    Builtin builtin = Builtin::id;
    Stat stat = Stat::best;
    std::string key; // the config key, or the series name as the query wrote it
};

// A value as the query wrote it: its text always (text comparisons see it), its number where it is one.
struct Literal {
    std::string text;
    double number = NAN;
    bool before_now = false; // a relative time ("-2d"): number is the seconds before `now`
    bool is_number() const { return !std::isnan(number); }
    double value(double now) const { return before_now ? now - number : number; }
};

enum class Archived { no, yes, any };

// Most patterns typed into a filter box are a word, perhaps anchored ("seed", "^cnn", "seed.*"): those are found
// with string_view, without the regex machinery, which costs a microsecond a run.
enum class Literally { no, contains, starts_with, ends_with, equals };

} // namespace

struct RunQuery::Node {
    enum class Kind {
        all_of,
        any_of,
        negation,
        comparison,
        one_of,
        regex_search,
        tag,
        state,
        backend,
        archived,
        starred
    };
    Kind kind = Kind::all_of;
    std::vector<Node> children; // all_of, any_of, negation
    Field field;                // comparison, one_of, regex_search
    Op op = Op::eq;
    std::vector<Literal> literals; // comparison: one; one_of: the list
    std::regex regex;
    Literally literally = Literally::no; // regex_search: the pattern is the plain text `word`, so anchored
    std::string word;                    // tag, state, backend; regex_search: the plain text
    Archived archived = Archived::no;
    bool starred = false;
};

namespace {

using Node = RunQuery::Node;

// ---- Reading a field of a run ----

// One field of one run as a condition sees it: absent, a number (its text formatted only when a text comparison or a
// regex asks), or text.
struct Value {
    bool present = false;
    double number = NAN;
    std::string_view text;
    bool has_text = false;
};

Value number_value(double number) {
    Value value;
    value.present = !std::isnan(number);
    value.number = number;
    return value;
}

Value text_value(std::string_view text) {
    Value value;
    value.present = true;
    value.text = text;
    value.has_text = true;
    return value;
}

Value time_value(double seconds) { return seconds == 0 ? Value{} : number_value(seconds); }

// The text of a value; a number without one is printed in its shortest round-trip form into buffer.
std::string_view text_of(const Value& value, char (&buffer)[32]) {
    if (value.has_text)
        return value.text;
    const auto printed = std::to_chars(buffer, buffer + sizeof buffer, value.number);
    return std::string_view(buffer, printed.ec == std::errc() ? static_cast<size_t>(printed.ptr - buffer) : 0);
}

// runfield.h's: '/' and '_' are one character, so best.val_accuracy names the series "val/accuracy".
const MetricSummary* find_series(const RunRecord& run, const std::string& series) { return find_summary(run, series); }

Value read_builtin(Builtin builtin, const RunRecord& run, double now) {
    switch (builtin) {
    case Builtin::id:
        return number_value(static_cast<double>(run.id));
    case Builtin::name:
        return text_value(run.name);
    case Builtin::state:
        return text_value(run.state);
    case Builtin::reason:
        return text_value(run.reason);
    case Builtin::backend:
        return text_value(run.backend);
    case Builtin::note:
        return text_value(run.note);
    case Builtin::progress:
        return number_value(run.progress);
    case Builtin::spend:
        return number_value(run.spend);
    case Builtin::created:
        return time_value(run.created);
    case Builtin::started:
        return time_value(run.started);
    case Builtin::finished:
        return time_value(run.finished);
    case Builtin::duration:
        if (run.started == 0)
            return {};
        return number_value((run.finished != 0 ? run.finished : now) - run.started);
    }
    return {};
}

Value read_summary(Stat stat, const MetricSummary& summary) {
    switch (stat) {
    case Stat::best:
        return number_value(summary.best);
    case Stat::last:
        return number_value(summary.last);
    case Stat::min:
        return number_value(summary.min);
    case Stat::max:
        return number_value(summary.max);
    case Stat::count:
        return number_value(static_cast<double>(summary.count));
    case Stat::last_step:
        return number_value(static_cast<double>(summary.last_step));
    }
    return {};
}

Value read(const Field& field, const RunRecord& run, double now) {
    switch (field.kind) {
    case FieldKind::builtin:
        return read_builtin(field.builtin, run, now);
    case FieldKind::summary: {
        const MetricSummary* summary = find_series(run, field.key);
        return summary ? read_summary(field.stat, *summary) : Value{};
    }
    case FieldKind::config: {
        const auto found = run.config.find(field.key);
        if (found == run.config.end())
            return {};
        Value value = text_value(found->second.text);
        value.number = found->second.number; // NaN unless is_number()
        return value;
    }
    }
    return {};
}

template <typename T>
bool holds(Op op, const T& a, const T& b) {
    switch (op) {
    case Op::eq:
        return a == b;
    case Op::ne:
        return a != b;
    case Op::lt:
        return a < b;
    case Op::le:
        return a <= b;
    case Op::gt:
        return a > b;
    case Op::ge:
        return a >= b;
    }
    return false;
}

// Numbers compare as numbers when both sides are numbers; anything else compares the two texts.
bool compare(const Value& value, Op op, const Literal& literal, double now) {
    if (!value.present)
        return false;
    if (!std::isnan(value.number) && literal.is_number())
        return holds(op, value.number, literal.value(now));
    char buffer[32];
    return holds(op, text_of(value, buffer), std::string_view(literal.text));
}

bool evaluate(const Node& node, const RunRecord& run, double now) {
    switch (node.kind) {
    case Node::Kind::all_of:
        return std::all_of(node.children.begin(), node.children.end(),
                           [&](const Node& child) { return evaluate(child, run, now); });
    case Node::Kind::any_of:
        return std::any_of(node.children.begin(), node.children.end(),
                           [&](const Node& child) { return evaluate(child, run, now); });
    case Node::Kind::negation:
        return !evaluate(node.children.front(), run, now);
    case Node::Kind::comparison:
        return compare(read(node.field, run, now), node.op, node.literals.front(), now);
    case Node::Kind::one_of: {
        const Value value = read(node.field, run, now);
        return std::any_of(node.literals.begin(), node.literals.end(),
                           [&](const Literal& literal) { return compare(value, Op::eq, literal, now); });
    }
    case Node::Kind::regex_search: {
        const Value value = read(node.field, run, now);
        if (!value.present)
            return false;
        char buffer[32];
        const std::string_view text = text_of(value, buffer);
        switch (node.literally) {
        case Literally::contains:
            return text.find(node.word) != std::string_view::npos;
        case Literally::starts_with:
            return text.starts_with(node.word);
        case Literally::ends_with:
            return text.ends_with(node.word);
        case Literally::equals:
            return text == node.word;
        case Literally::no:
            break;
        }
        return std::regex_search(text.data(), text.data() + text.size(), node.regex);
    }
    case Node::Kind::tag:
        return std::find(run.tags.begin(), run.tags.end(), node.word) != run.tags.end();
    case Node::Kind::state:
        return run.state == node.word;
    case Node::Kind::backend:
        return run.backend == node.word;
    case Node::Kind::archived:
        return node.archived == Archived::any || run.archived == (node.archived == Archived::yes);
    case Node::Kind::starred:
        return run.starred == node.starred;
    }
    return false;
}

// ---- Lexing ----

// Where the parse stops: thrown inside the parser only, caught in RunQuery::parse.
struct Failure {
    size_t position;
    std::string message;
};

[[noreturn]] void fail(size_t position, std::string message) { throw Failure{position, std::move(message)}; }

enum class Token {
    end,
    word, // a field, or a bare text value
    number,
    relative_time, // -2d
    text,          // a quoted string
    prefix,        // tag:NAME and the like, with its value
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    tilde,
    open,
    close,
    open_list,
    close_list,
    comma,
    keyword_and,
    keyword_or,
    keyword_not,
    keyword_in,
    keyword_true,
    keyword_false,
};

struct Lexeme {
    Token kind = Token::end;
    size_t position = 0, end = 0;
    std::string text;    // a word, a decoded string, a prefix's value, a number's spelling
    double number = NAN; // number, relative_time (seconds before now)
    Prefix prefix = Prefix::unknown;
    size_t value_position = 0; // prefix: where its value starts
};

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
// Characters that glue onto a number and make it a word ("3x3", "1.2.3"), which a query must quote.
bool continues_number(char c) { return is_letter(c) || is_digit(c) || c == '_' || c == '.' || c == '/'; }

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return (is_letter(x) ? (x | 0x20) : x) == (is_letter(y) ? (y | 0x20) : y);
           });
}

std::string describe(char c) {
    if (c >= 0x21 && c <= 0x7e)
        return std::string("'") + c + "'";
    static const char hex[] = "0123456789abcdef";
    const auto byte = static_cast<unsigned char>(c);
    return std::string("byte 0x") + hex[byte >> 4] + hex[byte & 15];
}

int64_t days_from_civil(int64_t year, unsigned month, unsigned day) { // Howard Hinnant's algorithm
    year -= month <= 2;
    const int64_t era = (year >= 0 ? year : year - 399) / 400;
    const auto year_of_era = static_cast<unsigned>(year - era * 400);
    const unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    const unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + static_cast<int64_t>(day_of_era) - 719468;
}

class Lexer {
public:
    explicit Lexer(std::string_view text) : text_(text) {}

    Lexeme lex(size_t at) const {
        while (at < text_.size() && is_space(text_[at]))
            ++at;
        Lexeme lexeme;
        lexeme.position = lexeme.end = at;
        if (at == text_.size())
            return lexeme;
        const char c = text_[at];
        if (is_letter(c) || c == '_')
            return word(at);
        if (c == '"' || c == '\'')
            return quoted(at, Token::text);
        if (is_digit(c) || ((c == '-' || c == '.') && digit_at(at + 1)) ||
            (c == '-' && text_.substr(at + 1, 1) == "." && digit_at(at + 2)))
            return is_date(at) ? date(at) : number(at);
        return symbol(at);
    }

private:
    bool digit_at(size_t at) const { return at < text_.size() && is_digit(text_[at]); }
    char at_or_nul(size_t at) const { return at < text_.size() ? text_[at] : '\0'; }

    Lexeme make(Token kind, size_t position, size_t end) const {
        Lexeme lexeme;
        lexeme.kind = kind;
        lexeme.position = position;
        lexeme.end = end;
        return lexeme;
    }

    // [A-Za-z_][A-Za-z0-9_./\[\]-]*, where '-' continues a word only before a letter or digit (so x>-2d is three
    // tokens), '[' only when the word is not the keyword in (x in[1]), and ']' only to close a '[' of the word (so
    // the list in [a, b] keeps its bracket).
    Lexeme word(size_t at) const {
        size_t end = at;
        int open_brackets = 0;
        while (end < text_.size()) {
            const char c = text_[end];
            // A letter, digit, _ . / continues the word; so does a - before a letter or digit (resnet-50).
            if (is_letter(c) || is_digit(c) || c == '_' || c == '.' || c == '/' ||
                (c == '-' && (is_letter(at_or_nul(end + 1)) || is_digit(at_or_nul(end + 1))))) {
                ++end;
            } else if (c == '[' && !equals_ignoring_case(text_.substr(at, end - at), "in")) {
                ++open_brackets;
                ++end;
            } else if (c == ']' && open_brackets > 0) {
                --open_brackets;
                ++end;
            } else {
                break;
            }
        }
        const std::string_view spelled = text_.substr(at, end - at);
        if (at_or_nul(end) == ':')
            return prefix(at, spelled, end + 1);
        static const std::pair<const char*, Token> keywords[] = {
            {"and", Token::keyword_and}, {"or", Token::keyword_or},     {"not", Token::keyword_not},
            {"in", Token::keyword_in},   {"true", Token::keyword_true}, {"false", Token::keyword_false},
        };
        Lexeme lexeme = make(Token::word, at, end);
        for (const auto& [keyword, kind] : keywords)
            if (equals_ignoring_case(spelled, keyword))
                lexeme.kind = kind;
        lexeme.text = spelled;
        return lexeme;
    }

    // tag:NAME, state:NAME, ...: the value is a quoted string or everything up to a space, a bracket, a quote, a
    // comma or an operator, so tags such as lr-sweep:2 need no quotes. An unknown prefix is the parser's to report.
    Lexeme prefix(size_t at, std::string_view name, size_t value_at) const {
        static const std::pair<const char*, Prefix> prefixes[] = {
            {"tag", Prefix::tag},           {"state", Prefix::state},     {"backend", Prefix::backend},
            {"archived", Prefix::archived}, {"starred", Prefix::starred},
        };
        Lexeme lexeme = make(Token::prefix, at, value_at);
        for (const auto& [known, kind] : prefixes)
            if (equals_ignoring_case(name, known))
                lexeme.prefix = kind;
        lexeme.value_position = value_at;
        if (lexeme.prefix == Prefix::unknown)
            return lexeme;
        const char first = at_or_nul(value_at);
        if (first == '"' || first == '\'') {
            Lexeme value = quoted(value_at, Token::text);
            lexeme.text = std::move(value.text);
            lexeme.end = value.end;
            return lexeme;
        }
        size_t end = value_at;
        while (end < text_.size() && !is_space(text_[end]) &&
               std::string_view("()[],\"'=!<>~").find(text_[end]) == std::string_view::npos)
            ++end;
        if (end == value_at)
            fail(value_at, "expected a value after '" + std::string(name) + ":' (" + std::string(name) +
                               ":NAME, or a quoted \"name with spaces\")");
        lexeme.text = text_.substr(value_at, end - value_at);
        lexeme.end = end;
        return lexeme;
    }

    // "..." or '...'; \" \' \\ \n \t are escapes, any other backslash stays as written, so "seed\.\d+" reaches the
    // regex as typed.
    Lexeme quoted(size_t at, Token kind) const {
        const char quote = text_[at];
        Lexeme lexeme = make(kind, at, at);
        for (size_t i = at + 1; i < text_.size(); ++i) {
            const char c = text_[i];
            if (c == quote) {
                lexeme.end = i + 1;
                return lexeme;
            }
            if (c == '\\' && i + 1 < text_.size()) {
                const char next = text_[++i];
                if (next == 'n')
                    lexeme.text += '\n';
                else if (next == 't')
                    lexeme.text += '\t';
                else if (next == '"' || next == '\'' || next == '\\')
                    lexeme.text += next;
                else
                    lexeme.text.append({'\\', next});
                continue;
            }
            lexeme.text += c;
        }
        fail(at, std::string("unterminated string: the ") + quote + " here has no closing " + quote);
    }

    bool is_date(size_t at) const {
        for (size_t i = 0; i < 4; ++i)
            if (!digit_at(at + i))
                return false;
        return at_or_nul(at + 4) == '-' && digit_at(at + 5);
    }

    // 2026-12-01, 2026-12-01T10:30 or 2026-12-01T10:30:15, optionally ending in Z; always UTC.
    Lexeme date(size_t at) const {
        size_t i = at;
        const auto digits = [&](size_t count, int& out) {
            out = 0;
            for (size_t k = 0; k < count; ++k, ++i) {
                if (!digit_at(i))
                    return false;
                out = out * 10 + (text_[i] - '0');
            }
            return true;
        };
        const auto expect = [&](char c) { return at_or_nul(i) == c ? (++i, true) : false; };
        int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
        bool ok = digits(4, year) && expect('-') && digits(2, month) && expect('-') && digits(2, day);
        if (ok && (at_or_nul(i) == 'T' || at_or_nul(i) == 't')) {
            ++i;
            ok = digits(2, hour) && expect(':') && digits(2, minute);
            if (ok && at_or_nul(i) == ':') {
                ++i;
                ok = digits(2, second);
            }
        }
        if (ok && (at_or_nul(i) == 'Z' || at_or_nul(i) == 'z'))
            ++i;
        if (!ok || continues_number(at_or_nul(i)) || at_or_nul(i) == ':' || at_or_nul(i) == '-')
            fail(at, "expected a date such as 2026-12-01 or 2026-12-01T10:30 (UTC)");
        static const int month_days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        if (month < 1 || month > 12 || day < 1 || day > month_days[month - 1] || (month == 2 && day == 29 && !leap))
            fail(at, "no such date: " + std::string(text_.substr(at, 10)));
        if (hour > 23 || minute > 59 || second > 59)
            fail(at, "no such time of day: " + std::string(text_.substr(at + 11, i - at - 11)));
        Lexeme lexeme = make(Token::number, at, i);
        lexeme.text = text_.substr(at, i - at);
        lexeme.number =
            static_cast<double>(days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day))) *
                86400.0 +
            hour * 3600.0 + minute * 60.0 + second;
        return lexeme;
    }

    // 3, -0.5, 1e-3; with a unit (s m h d w) a span of seconds: -2d is two days before now, 90m is 5400 s.
    Lexeme number(size_t at) const {
        size_t i = at;
        const bool negative = text_[i] == '-';
        if (negative)
            ++i;
        const size_t magnitude = i;
        while (digit_at(i))
            ++i;
        if (at_or_nul(i) == '.') {
            ++i;
            while (digit_at(i))
                ++i;
        }
        if ((at_or_nul(i) == 'e' || at_or_nul(i) == 'E') &&
            (digit_at(i + 1) || ((at_or_nul(i + 1) == '-' || at_or_nul(i + 1) == '+') && digit_at(i + 2)))) {
            i += 2;
            while (digit_at(i))
                ++i;
        }
        const size_t digits_end = i;
        double unit = 0;
        if (const char c = at_or_nul(i); !continues_number(at_or_nul(i + 1))) {
            unit = c == 's' ? 1 : c == 'm' ? 60 : c == 'h' ? 3600 : c == 'd' ? 86400 : c == 'w' ? 604800 : 0;
            if (unit != 0)
                ++i;
        }
        if (continues_number(at_or_nul(i)) || at_or_nul(i) == '-') {
            size_t end = i;
            while (end < text_.size() && end - at < 40 && (continues_number(text_[end]) || text_[end] == '-'))
                ++end;
            const std::string spelled(text_.substr(at, end - at));
            fail(at, "'" + spelled + "' is not a number: quote it as text (\"" + spelled +
                         "\"); a time span is a number and a unit s, m, h, d or w (-2d)");
        }
        double value = 0;
        const auto parsed = std::from_chars(text_.data() + magnitude, text_.data() + digits_end, value);
        if (parsed.ec != std::errc() || parsed.ptr != text_.data() + digits_end ||
            !std::isfinite(value * (unit ? unit : 1)))
            fail(at, "'" + std::string(text_.substr(at, i - at)) + "' is out of the range of numbers");
        Lexeme lexeme = make(Token::number, at, i);
        lexeme.text = text_.substr(at, i - at);
        if (unit != 0 && negative) {
            lexeme.kind = Token::relative_time;
            lexeme.number = value * unit;
        } else {
            lexeme.number = (negative ? -value : value) * (unit != 0 ? unit : 1);
        }
        return lexeme;
    }

    Lexeme symbol(size_t at) const {
        const char c = text_[at], next = at_or_nul(at + 1);
        switch (c) {
        case '=':
            return make(Token::eq, at, next == '=' ? at + 2 : at + 1);
        case '!':
            if (next == '=')
                return make(Token::ne, at, at + 2);
            fail(at, "unexpected '!': write 'not' to negate a condition, '!=' for 'not equal'");
        case '<':
            return next == '=' ? make(Token::le, at, at + 2) : make(Token::lt, at, at + 1);
        case '>':
            return next == '=' ? make(Token::ge, at, at + 2) : make(Token::gt, at, at + 1);
        case '~':
            return make(Token::tilde, at, at + 1);
        case '(':
            return make(Token::open, at, at + 1);
        case ')':
            return make(Token::close, at, at + 1);
        case '[':
            return make(Token::open_list, at, at + 1);
        case ']':
            return make(Token::close_list, at, at + 1);
        case ',':
            return make(Token::comma, at, at + 1);
        case '&':
            fail(at, "unexpected '&': write 'and'");
        case '|':
            fail(at, "unexpected '|': write 'or'");
        default:
            fail(at, "unexpected " + describe(c) + "; quote text values (\"...\")");
        }
    }

    std::string_view text_;
};

// ---- Parsing ----

Field resolve_field(const std::string& name) {
    static const std::pair<const char*, Builtin> builtins[] = {
        {"id", Builtin::id},
        {"name", Builtin::name},
        {"state", Builtin::state},
        {"reason", Builtin::reason},
        {"backend", Builtin::backend},
        {"note", Builtin::note},
        {"progress", Builtin::progress},
        {"spend", Builtin::spend},
        {"created", Builtin::created},
        {"started", Builtin::started},
        {"finished", Builtin::finished},
        {"duration", Builtin::duration},
    };
    Field field;
    for (const auto& [builtin_name, builtin] : builtins) {
        if (name == builtin_name) {
            field.kind = FieldKind::builtin;
            field.builtin = builtin;
            return field;
        }
    }
    static const std::pair<std::string_view, Stat> summaries[] = {
        {"best.", Stat::best}, {"last.", Stat::last},   {"min.", Stat::min},
        {"max.", Stat::max},   {"count.", Stat::count}, {"last_step.", Stat::last_step},
    };
    for (const auto& [start, stat] : summaries) {
        if (name.size() > start.size() && name.starts_with(start)) {
            field.kind = FieldKind::summary;
            field.stat = stat;
            field.key = name.substr(start.size());
            return field;
        }
    }
    constexpr std::string_view config = "config.";
    field.key = name.size() > config.size() && name.starts_with(config) ? name.substr(config.size()) : name;
    return field;
}

// What libstdc++'s regex compiler must not see: it reads a back-reference's number and a repetition count into a
// long without checking for overflow (undefined behaviour past 19 digits), and the polynomial matcher refuses
// back-references anyway.
const char* refused_pattern(std::string_view pattern) {
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '\\' && i + 1 < pattern.size()) {
            if (is_digit(pattern[++i]))
                return "back-references such as \\1 are not supported";
        } else if (pattern[i] == '{') {
            for (size_t k = i + 1, run = 0; k < pattern.size() && (is_digit(pattern[k]) || pattern[k] == ','); ++k) {
                run = pattern[k] == ',' ? 0 : run + 1;
                if (run > 5)
                    return "repetition counts above 99999 are not supported";
            }
        }
    }
    return nullptr;
}

// The plain text a pattern searches for, when it is one: ^ and $ anchor it, a leading or trailing .* changes
// nothing in a search, \ before a character that is not a letter or digit makes it plain.
Literally as_literal(std::string_view pattern, std::string& text) {
    const auto escaped_at = [&](size_t at) { // an odd number of backslashes before `at`
        size_t backslashes = 0;
        while (at > backslashes && pattern[at - 1 - backslashes] == '\\')
            ++backslashes;
        return backslashes % 2 == 1;
    };
    bool anchored_start = false, anchored_end = false;
    if (pattern.starts_with('^')) {
        anchored_start = true;
        pattern.remove_prefix(1);
    } else if (pattern.starts_with(".*")) {
        pattern.remove_prefix(2);
    }
    if (pattern.ends_with('$') && !escaped_at(pattern.size() - 1)) {
        anchored_end = true;
        pattern.remove_suffix(1);
    } else if (pattern.ends_with(".*") && !escaped_at(pattern.size() - 2)) {
        pattern.remove_suffix(2);
    }
    text.clear();
    for (size_t i = 0; i < pattern.size(); ++i) {
        char c = pattern[i];
        if (c == '\\') {
            if (i + 1 == pattern.size() || is_letter(pattern[i + 1]) || is_digit(pattern[i + 1]))
                return Literally::no;
            c = pattern[++i];
        } else if (std::string_view("^$.|?*+()[]{}").find(c) != std::string_view::npos) {
            return Literally::no;
        }
        text += c;
    }
    return anchored_start ? (anchored_end ? Literally::equals : Literally::starts_with)
                          : (anchored_end ? Literally::ends_with : Literally::contains);
}

class Parser {
public:
    explicit Parser(std::string_view text) : text_(text), lexer_(text) {}

    // nullopt: a blank query.
    std::optional<Node> parse_query() {
        if (peek().kind == Token::end)
            return std::nullopt;
        Node root = parse_or(0, "");
        if (peek().kind != Token::end)
            fail(peek().position, "expected 'and', 'or' or the end of the query");
        return root;
    }

    bool mentions_archived() const { return mentions_archived_; }

private:
    const Lexeme& peek() {
        if (!peeked_) {
            next_ = lexer_.lex(at_);
            peeked_ = true;
        }
        return next_;
    }
    Lexeme take() {
        peek();
        peeked_ = false;
        at_ = next_.end;
        return std::move(next_);
    }
    std::string spelled(const Lexeme& lexeme) const {
        return std::string(text_.substr(lexeme.position, lexeme.end - lexeme.position));
    }

    static Node combine(Node::Kind kind, std::vector<Node> children) {
        if (children.size() == 1)
            return std::move(children.front());
        Node node;
        node.kind = kind;
        node.children = std::move(children);
        return node;
    }

    // after: what came before this condition ("'and'", "'('"), for the message when no condition follows.
    Node parse_or(int depth, const std::string& after) {
        std::vector<Node> terms;
        terms.push_back(parse_and(depth, after));
        while (peek().kind == Token::keyword_or) {
            take();
            terms.push_back(parse_and(depth, "'or'"));
        }
        return combine(Node::Kind::any_of, std::move(terms));
    }

    Node parse_and(int depth, const std::string& after) {
        std::vector<Node> factors;
        factors.push_back(parse_not(depth, after));
        while (peek().kind == Token::keyword_and) {
            take();
            factors.push_back(parse_not(depth, "'and'"));
        }
        return combine(Node::Kind::all_of, std::move(factors));
    }

    Node parse_not(int depth, const std::string& after) {
        if (peek().kind != Token::keyword_not)
            return parse_primary(depth, after);
        const Lexeme keyword = take();
        if (depth + 1 > kMaxNesting)
            fail(keyword.position, "more than " + std::to_string(kMaxNesting) + " nested 'not' and '('");
        Node node;
        node.kind = Node::Kind::negation;
        node.children.push_back(parse_not(depth + 1, "'not'"));
        return node;
    }

    Node parse_primary(int depth, const std::string& after) {
        const Lexeme& next = peek();
        switch (next.kind) {
        case Token::open: {
            const Lexeme open = take();
            if (depth + 1 > kMaxNesting)
                fail(open.position, "more than " + std::to_string(kMaxNesting) + " nested 'not' and '('");
            Node inner = parse_or(depth + 1, "'('");
            if (peek().kind != Token::close)
                fail(peek().position, "expected ')' to close the '(' at " + std::to_string(open.position));
            take();
            return inner;
        }
        case Token::prefix:
            return parse_prefix(take());
        case Token::word:
            return parse_condition(take());
        case Token::keyword_in:
        case Token::keyword_true:
        case Token::keyword_false:
            fail(next.position, "'" + next.text + "' is a keyword, not a field: write config." + next.text +
                                    " for a config key of that name");
        default:
            fail(next.position, after.empty()
                                    ? "expected a condition, such as name == \"x\", tag:x, 'not' or '('"
                                    : "expected a condition after " + after + " (a comparison, tag:x, 'not' or '(')");
        }
    }

    Node parse_prefix(const Lexeme& lexeme) {
        const std::string name(text_.substr(lexeme.position, lexeme.value_position - 1 - lexeme.position));
        Node node;
        switch (lexeme.prefix) {
        case Prefix::unknown:
            fail(lexeme.position,
                 "unknown prefix '" + name + ":' (known: tag:, state:, backend:, archived:, starred:)");
        case Prefix::tag:
            node.kind = Node::Kind::tag;
            break;
        case Prefix::state:
            node.kind = Node::Kind::state;
            break;
        case Prefix::backend:
            node.kind = Node::Kind::backend;
            break;
        case Prefix::archived:
            node.kind = Node::Kind::archived;
            mentions_archived_ = true;
            if (equals_ignoring_case(lexeme.text, "true"))
                node.archived = Archived::yes;
            else if (equals_ignoring_case(lexeme.text, "false"))
                node.archived = Archived::no;
            else if (equals_ignoring_case(lexeme.text, "any"))
                node.archived = Archived::any;
            else
                fail(lexeme.value_position, "archived: takes true, false or any");
            return node;
        case Prefix::starred:
            node.kind = Node::Kind::starred;
            if (equals_ignoring_case(lexeme.text, "true"))
                node.starred = true;
            else if (!equals_ignoring_case(lexeme.text, "false"))
                fail(lexeme.value_position, "starred: takes true or false");
            return node;
        }
        node.word = lexeme.text;
        return node;
    }

    Node parse_condition(const Lexeme& field) {
        Node node;
        node.field = resolve_field(field.text);
        const Lexeme& next = peek();
        switch (next.kind) {
        case Token::eq:
        case Token::ne:
        case Token::lt:
        case Token::le:
        case Token::gt:
        case Token::ge: {
            static const Op ops[] = {Op::eq, Op::ne, Op::lt, Op::le, Op::gt, Op::ge};
            node.kind = Node::Kind::comparison;
            node.op = ops[static_cast<int>(next.kind) - static_cast<int>(Token::eq)];
            const Lexeme op = take();
            node.literals.push_back(parse_value(spelled(op)));
            return node;
        }
        case Token::keyword_in:
            take();
            node.kind = Node::Kind::one_of;
            parse_list(node.literals);
            return node;
        case Token::tilde:
            take();
            node.kind = Node::Kind::regex_search;
            node.regex = parse_regex(node.literally, node.word);
            return node;
        default:
            fail(next.position, "expected an operator (==, !=, <, <=, >, >=, in or ~) after '" + field.text + "'");
        }
    }

    Literal parse_value(const std::string& after) {
        const Lexeme& next = peek();
        Literal literal;
        switch (next.kind) {
        case Token::number:
        case Token::relative_time:
            literal.number = next.number;
            literal.before_now = next.kind == Token::relative_time;
            literal.text = next.text;
            break;
        case Token::text:
        case Token::word:
            literal.text = next.text;
            break;
        case Token::keyword_true:
        case Token::keyword_false:
            literal.number = next.kind == Token::keyword_true ? 1 : 0;
            literal.text = next.kind == Token::keyword_true ? "true" : "false";
            break;
        case Token::prefix:
            fail(next.position, "expected a value after '" + after + "': quote a value that holds ':' (\"a:b\")");
        default:
            fail(next.position, "expected a value after '" + after + "'");
        }
        take();
        return literal;
    }

    void parse_list(std::vector<Literal>& literals) {
        if (peek().kind != Token::open_list)
            fail(peek().position, "expected '[' after 'in', as in seed in [1, 2]");
        const Lexeme open = take();
        if (peek().kind == Token::close_list) {
            take();
            return;
        }
        literals.push_back(parse_value("["));
        while (peek().kind == Token::comma) {
            take();
            literals.push_back(parse_value(","));
        }
        if (peek().kind != Token::close_list)
            fail(peek().position, "expected ',' or ']' to close the '[' at " + std::to_string(open.position));
        take();
    }

    std::regex parse_regex(Literally& literally, std::string& plain) {
        const Lexeme& pattern = peek();
        if (pattern.kind != Token::text)
            fail(pattern.position, "'~' needs a quoted regular expression, as in name ~ \"seed[0-9]+\"");
        if (pattern.text.size() > kMaxPatternBytes)
            fail(pattern.position, "'~' needs a quoted regular expression: this one is longer than " +
                                       std::to_string(kMaxPatternBytes) + " bytes");
        if (const char* refused = refused_pattern(pattern.text))
            fail(pattern.position, std::string("'~' needs a quoted regular expression: ") + refused);
        auto flags = std::regex::ECMAScript;
#ifdef __GLIBCXX__
        // libstdc++'s default matcher backtracks, exponentially on patterns like (a*)*b; this one runs in
        // polynomial time and only refuses back-references.
        flags |= std::regex_constants::__polynomial;
#endif
        std::regex regex;
        try {
            regex.assign(pattern.text, flags);
        } catch (const std::regex_error& e) {
            fail(pattern.position, "'~' needs a quoted regular expression: " +
                                       std::string(e.code() == std::regex_constants::error_complexity
                                                       ? "back-references such as \\1 are not supported"
                                                       : e.what()));
        }
        literally = as_literal(pattern.text, plain);
        take();
        return regex;
    }

    std::string_view text_;
    Lexer lexer_;
    size_t at_ = 0;
    Lexeme next_;
    bool peeked_ = false;
    bool mentions_archived_ = false;
};

} // namespace

RunQuery RunQuery::parse(std::string_view text, QueryError* error) {
    RunQuery query;
    try {
        Parser parser(text);
        std::optional<Node> root = parser.parse_query();
        if (root)
            query.root_ = std::make_shared<const Node>(std::move(*root));
        query.shows_archived_ = parser.mentions_archived();
        query.valid_ = true;
        if (error)
            *error = QueryError{};
    } catch (const Failure& failure) {
        if (error)
            *error = QueryError{std::min(failure.position, text.size()), failure.message};
    } catch (const std::exception& e) { // out of memory, or a regex engine's own limits
        query.root_.reset();
        query.valid_ = query.shows_archived_ = false;
        if (error)
            *error = QueryError{0, std::string("the query could not be parsed (") + e.what() + "); shorten it"};
    }
    return query;
}

bool RunQuery::matches(const RunRecord& run, double now) const {
    if (!valid_ || (run.archived && !shows_archived_))
        return false;
    if (!root_)
        return true;
    try {
        return evaluate(*root_, run, now);
    } catch (const std::exception&) { // std::regex gives up on some inputs (error_complexity, error_stack)
        return false;
    }
}

} // namespace traindeck
