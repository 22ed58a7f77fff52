#pragma once
// New job: the built-in trainer (data and augmentation; a preset or the model builder's layer list with each
// layer's output shape and parameters as you type; optimiser, schedule, precision, device, checkpoints and early
// stopping; and the whole spec as JSON that round-trips) or any command (argv words, working folder, environment), plus
// resources, priority, budget and restarts. It produces the worker's job request; it never talks to a backend itself.
// What the form means (the request, the default name, what to fix) is jobform.h's; this class only copies widgets to a
// JobForm and back.
#include "imagefoldersurvey.h"
#include "jobform.h"

#include <QDialog>
#include <QJsonObject>

class QCheckBox;
class QGroupBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableView;
class QToolButton;

namespace traindeck {

class LayerListModel;

class NewJobDialog : public QDialog {
    Q_OBJECT
public:
    explicit NewJobDialog(QWidget* parent = nullptr);

    // Starts from an existing request (clone and edit).
    void load(const QJsonObject& request);
    // Where the job may run; the first (or `current`) is chosen.
    void setBackends(const QStringList& names, const QString& current = {});
    QString backendName() const;
    // Registered dataset versions the job may use: (label, version). The job gets the chosen one read-only as
    // TRAINDECK_DATASET_DIR; the built-in trainer then reads Fashion-MNIST-named IDX files or the CSV paths there.
    void setDatasets(const QList<QPair<QString, QString>>& versions);
    // The form's values as they are now.
    JobForm form() const;
    QJsonObject request() const { return job_form_request(form()); }
    QString jobName() const { return job_form_name(form()); }
    // Empty when the form is valid; otherwise what to fix.
    QString problem() const { return job_form_problem(form()); }
    // Submit: from the JSON page, its text is applied first (and refused, with the reason, when it does not parse).
    void accept() override;

private:
    void setForm(const JobForm& form);
    void validate();
    void updateDataFields(); // which data fields apply to the data chosen
    void updateModelInput(); // the builder's shapes for the data chosen
    void updateTask();       // a regression: no label smoothing, early stopping on the loss
    void presetChosen();
    void builderEdited();
    void showSpecJson();
    bool applySpecJson(); // false: the JSON is not a spec the trainer takes (said in the problem line)

    QTabWidget* kind_;
    QComboBox* backend_;
    QComboBox* dataset_version_;
    QLineEdit* name_;
    // built-in
    QTabWidget* builtin_tabs_;
    QComboBox* model_; // the preset, or "custom": the builder's layers
    LayerListModel* layers_;
    QTableView* layers_view_;
    QToolButton* add_layer_;
    QLabel* model_summary_;
    QPlainTextEdit* spec_json_;
    QString shown_json_; // the text the JSON page was given: an unchanged page is not applied back
    int builtin_page_ = 0;
    // The training folder last looked at (off the GUI thread) and what it held: the builder's shapes use it.
    QString surveyed_folder_;
    ImageFolderSurvey survey_;
    int input_generation_ = 0;
    QComboBox* dataset_;
    QLineEdit* train_file_;
    QLineEdit* test_file_;
    QSpinBox* image_size_;
    QComboBox* channels_;
    QComboBox* resize_;
    QComboBox* missing_;
    QCheckBox* regression_; // a CSV's label column is a number to predict
    QGroupBox* augment_;
    QSpinBox* crop_padding_;
    QCheckBox* hflip_;
    QDoubleSpinBox* rotate_;
    QDoubleSpinBox* jitter_;
    QSpinBox* epochs_;
    QSpinBox* batch_;
    QSpinBox* grad_accum_;
    QComboBox* optimizer_;
    QDoubleSpinBox* lr_;
    QDoubleSpinBox* weight_decay_;
    QSpinBox* warmup_;
    QCheckBox* cosine_;
    QDoubleSpinBox* label_smoothing_;
    QSpinBox* seed_;
    QComboBox* device_;
    QComboBox* precision_;
    QSpinBox* checkpoint_every_;
    QSpinBox* keep_checkpoints_;
    QGroupBox* early_stopping_;
    QComboBox* early_metric_;
    QSpinBox* patience_;
    // command
    QLineEdit* argv_;
    QLineEdit* cwd_;
    QPlainTextEdit* env_;
    QCheckBox* shell_;
    // resources and policy
    QSpinBox* cpus_;
    QSpinBox* gpus_;
    QSpinBox* memory_;
    QSpinBox* priority_;
    QDoubleSpinBox* budget_;
    QSpinBox* restarts_;
    QCheckBox* migrate_;
    QLabel* problem_;
    // The request load() started from: fields the form does not show (a layer list, a data limit, checkpoint
    // intervals...) are kept, so clone-and-edit changes only what the user changed.
    QJsonObject loaded_;
    QPushButton* submit_ = nullptr;
};

} // namespace traindeck
