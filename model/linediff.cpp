#include "linediff.h"

#include <QList>
#include <QStringList>

#include <algorithm>
#include <vector>

namespace traindeck {

namespace {

QList<QByteArray> lines_of(const QByteArray& text) {
    QList<QByteArray> lines = text.split('\n');
    if (!lines.isEmpty() && lines.back().isEmpty())
        lines.pop_back(); // the newline that ends the last line
    return lines;
}

struct Edit {
    char kind; // ' ', '-', '+'
    int a, b;  // line indices (a for ' ' and '-', b for '+')
};

} // namespace

QString unified_diff(const QString& path_a, const QByteArray& a, const QString& path_b, const QByteArray& b,
                     int context) {
    if (a == b)
        return {};
    const QList<QByteArray> x = lines_of(a), y = lines_of(b);
    const qsizetype n = x.size(), m = y.size();
    const QString header = QStringLiteral("--- %1\n+++ %2\n").arg(path_a, path_b);
    if ((n + 1) * (m + 1) > 4'000'000)
        return header +
               QStringLiteral("@@ the files differ (%1 and %2 lines: too long to compare line by line here) @@\n")
                   .arg(n)
                   .arg(m);
    // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
    std::vector<int> lcs(static_cast<size_t>((n + 1) * (m + 1)), 0);
    const auto at = [&](qsizetype i, qsizetype j) -> int& { return lcs[static_cast<size_t>(i * (m + 1) + j)]; };
    for (qsizetype i = n - 1; i >= 0; --i)
        for (qsizetype j = m - 1; j >= 0; --j)
            at(i, j) = x[i] == y[j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    std::vector<Edit> edits;
    qsizetype i = 0, j = 0;
    while (i < n || j < m) {
        if (i < n && j < m && x[i] == y[j]) {
            edits.push_back({' ', static_cast<int>(i++), static_cast<int>(j++)});
        } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
            edits.push_back({'-', static_cast<int>(i++), static_cast<int>(j)}); // removals first, as diff -u
        } else {
            edits.push_back({'+', static_cast<int>(i), static_cast<int>(j++)});
        }
    }
    // Hunks: the changes with up to `context` unchanged lines around them.
    QString out = header;
    const size_t count = edits.size();
    for (size_t start = 0; start < count;) {
        while (start < count && edits[start].kind == ' ')
            ++start;
        if (start >= count)
            break;
        size_t first = start >= static_cast<size_t>(context) ? start - context : 0;
        size_t end = start;
        for (size_t unchanged = 0; end < count; ++end) {
            unchanged = edits[end].kind == ' ' ? unchanged + 1 : 0;
            if (unchanged > 2 * static_cast<size_t>(context))
                break;
        }
        // Trailing context: at most `context` unchanged lines after the last change.
        size_t last = end;
        while (last > first && edits[last - 1].kind == ' ')
            --last;
        end = std::min(count, last + context);
        int a_start = -1, b_start = -1, a_lines = 0, b_lines = 0;
        QStringList body;
        for (size_t k = first; k < end; ++k) {
            const Edit& e = edits[k];
            if (e.kind != '+') {
                if (a_start < 0)
                    a_start = e.a;
                ++a_lines;
            }
            if (e.kind != '-') {
                if (b_start < 0)
                    b_start = e.b;
                ++b_lines;
            }
            body << QChar(e.kind) + QString::fromUtf8(e.kind == '+' ? y[e.b] : x[e.a]);
        }
        const int a_from = a_lines ? a_start + 1 : (a_start < 0 ? edits[first].a : a_start);
        const int b_from = b_lines ? b_start + 1 : (b_start < 0 ? edits[first].b : b_start);
        out += QStringLiteral("@@ -%1,%2 +%3,%4 @@\n").arg(a_from).arg(a_lines).arg(b_from).arg(b_lines);
        out += body.join('\n') + '\n';
        start = end;
    }
    return out;
}

} // namespace traindeck
