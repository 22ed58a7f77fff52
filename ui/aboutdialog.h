#pragma once
// Help → About TrainDeck: the version and what it runs on — Qt (built against and running), SQLite, and the built-in
// trainer's engine as `traindeck-train --version` says it (its BLAS, whether CUDA is built in), read without blocking
// the GUI thread; "Copy" puts the whole text on the clipboard for a bug report.
#include <QDialog>

class QLabel;
class QProcess;

namespace traindeck {

class AboutDialog : public QDialog {
    Q_OBJECT
public:
    explicit AboutDialog(QWidget* parent = nullptr);
    // A trainer still answering is let go of without calling back into a dialog half destroyed.
    ~AboutDialog() override;
    // The versions as plain text (what Copy copies); the trainer's line says "…" until it has answered.
    QString versions() const;

signals:
    void trainerAnswered(); // the trainer's version is in (or why it could not be read)

private:
    void show_versions();

    QLabel* text_;
    QProcess* trainer_;
    QString trainer_version_;
};

} // namespace traindeck
