#pragma once
// A unified diff's added and removed lines in colour, its file headers in bold, in a read-only monospaced view: the
// Reproducibility tab's diff and Compare → Environment's code diff.
#include <QColor>
#include <QFontDatabase>
#include <QPlainTextEdit>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

namespace traindeck {

class DiffHighlighter : public QSyntaxHighlighter {
public:
    using QSyntaxHighlighter::QSyntaxHighlighter;

protected:
    void highlightBlock(const QString& text) override {
        QTextCharFormat format;
        if (text.startsWith("diff --git") || text.startsWith("+++") || text.startsWith("---")) {
            format.setFontWeight(QFont::Bold);
        } else if (text.startsWith('+')) {
            format.setForeground(QColor(0x1a, 0x7f, 0x37));
        } else if (text.startsWith('-')) {
            format.setForeground(QColor(0xcf, 0x22, 0x2e));
        } else if (text.startsWith("@@")) {
            format.setForeground(QColor(0x57, 0x60, 0x6a));
        } else {
            return;
        }
        setFormat(0, static_cast<int>(text.size()), format);
    }
};

// A read-only, unwrapped, monospaced view whose text is highlighted as a diff.
inline QPlainTextEdit* make_diff_view() {
    auto* view = new QPlainTextEdit;
    view->setReadOnly(true);
    view->setLineWrapMode(QPlainTextEdit::NoWrap);
    view->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    new DiffHighlighter(view->document());
    return view;
}

} // namespace traindeck
