#pragma once
// New sweep: the base job (the built-in trainer with the New job dialog's fields, or any command; the resources of
// each trial), the search space as a table (key, kind, low, high, q / values), the method, the objective, early
// stopping (none or ASHA), how many trials and how many at once, the seed and the budget. Under it a live preview —
// how many trials, the worst case in epochs (trials × the longest a trial trains) and what the trials cost an hour
// at the backend's prices, against the money cap — and what is wrong, in place: the sweep library's own validation
// (parse_sweep_spec, which names the key), so the dialog refuses exactly what the worker would. Start stays disabled
// while the spec is invalid. It produces the sweep spec JSON (README: Sweeps); it never talks to a backend itself.
#include "jobform.h"

#include <QDialog>
#include <QHash>
#include <QJsonObject>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableWidget;

namespace traindeck {

class NewSweepDialog : public QDialog {
    Q_OBJECT
public:
    enum SpaceColumn { KeyColumn, KindColumn, LowColumn, HighColumn, ExtraColumn }; // Extra: q, or a choice's values

    explicit NewSweepDialog(QWidget* parent = nullptr);

    // Where the sweep may run; the first (or `current`) is chosen.
    void setBackends(const QStringList& names, const QString& current = {});
    QString backendName() const;
    // Each backend's prices as its /v1/resources says them ({"base_per_hour", "gpu_per_hour", "cpu_per_hour"}, and
    // "gpu_count" and "cluster": what a trial with "auto" GPUs gets, whether GPUs are shared), for the preview's cost;
    // a backend without an entry has prices not known yet.
    void setPrices(const QHash<QString, QJsonObject>& prices);
    // Starts from a spec (a sweep to run again with changes): what the dialog does not show (divergence, the base's
    // other fields) goes out unchanged.
    void load(const QJsonObject& spec);

    // A row of the space; kind is choice, uniform, loguniform, int or qloguniform. `extra` is q (qloguniform) or
    // the values, comma-separated JSON or plain words (choice: "0.1, 0.01" or "sgd, adamw").
    void addDimension(const QString& key, const QString& kind, const QString& low = {}, const QString& high = {},
                      const QString& extra = {});
    QTableWidget& space() { return *space_; }

    QJsonObject spec() const;
    // "" when the spec can be started; otherwise what to fix, as the dialog shows it.
    QString problem() const;
    // The preview line as shown ("3 trials (a grid of 3) · at most 9 epochs ...").
    QString preview() const;
    QPushButton* startButton() const { return start_; }

private:
    JobForm baseForm() const;
    QJsonObject spaceJson(QString* problem) const;
    void validate();
    void updateEnabled();

    QLineEdit* name_;
    QComboBox* backend_;
    QTabWidget* kind_;
    QComboBox* model_;
    QComboBox* data_;
    QLineEdit* train_file_;
    QLineEdit* test_file_;
    QSpinBox* limit_;
    QSpinBox* epochs_;
    QSpinBox* batch_;
    QComboBox* optimizer_;
    QDoubleSpinBox* lr_;
    QSpinBox* trainer_seed_;
    QLineEdit* command_;
    QLineEdit* cwd_;
    QPlainTextEdit* env_;
    QSpinBox* cpus_;
    QSpinBox* gpus_;
    QSpinBox* per_gpu_; // trials_per_gpu
    QTableWidget* space_;
    QComboBox* method_;
    QComboBox* metric_;
    QComboBox* goal_;
    QComboBox* stopping_;
    QComboBox* resource_;
    QDoubleSpinBox* min_resource_;
    QDoubleSpinBox* max_resource_;
    QDoubleSpinBox* factor_;
    QSpinBox* max_trials_;
    QSpinBox* max_concurrent_;
    QSpinBox* seed_;
    QDoubleSpinBox* money_;
    QDoubleSpinBox* gpu_hours_;
    QLabel* preview_;
    QLabel* problem_;
    QPushButton* start_ = nullptr;
    QHash<QString, QJsonObject> prices_;
    // What load() started from: the fields the dialog does not show go out as they came.
    QJsonObject loaded_;
    JobForm loaded_form_;
};

} // namespace traindeck
