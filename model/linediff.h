#pragma once
// A unified diff of two texts, as `diff -u` writes it (3 lines of context), for showing how two runs' code differs.
// Longest common subsequence over lines; past a size where that table would be large (4 million cells), the two
// files are only said to differ. Plain Qt Core, no processes.
#include <QByteArray>
#include <QString>

namespace traindeck {

// "" when the texts are equal. path_a / path_b: the names in the "---" / "+++" lines ("/dev/null" for a file one
// side lacks).
QString unified_diff(const QString& path_a, const QByteArray& a, const QString& path_b, const QByteArray& b,
                     int context = 3);

} // namespace traindeck
