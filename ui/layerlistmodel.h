#pragma once
// The New job dialog's model builder as a table model (Qt Core only, so its tests need no window): one row a layer
// with the fields that layer has, its output shape and parameter count from the trainer's own layer plan
// (backend/engine/layerplan.h) recomputed on every edit, the row that makes the list impossible marked with why, and
// the implied classifier head as a last, read-only row. Inserting, removing and moving rows keeps every residual
// add pointing at the layer it named.
#include "layerplan.h"

#include <QAbstractTableModel>
#include <QJsonArray>
#include <QJsonObject>

namespace traindeck {

class LayerListModel : public QAbstractTableModel {
    Q_OBJECT
public:
    enum Column { Type, Out, Kernel, Stride, Padding, Size, Dropout, From, Output, Parameters, ColumnCount };

    explicit LayerListModel(QObject* parent = nullptr);

    // The input the shapes are computed for (the data's sample shape) and its class count (the head's outputs).
    void setInput(engine::SampleShape input, int classes);
    // The spec's "layers" (invalid entries are refused by the trainer's parser: false, nothing changed).
    bool setLayers(const QJsonArray& layers, QString* problem = nullptr);
    // A preset's layers ("mlp", "cnn", "resnet"), expanded by the trainer's parser with the preset's own keys
    // (width, hidden, conv...) taken from `options` (a spec; other keys are ignored).
    void setPreset(const QString& model, const QJsonObject& options = {});
    QJsonArray layersJson() const;
    const engine::LayerPlan& plan() const { return plan_; }
    // "12,345 parameters" or what does not fit, as the dialog's footer says it.
    QString summary() const;

    void insertLayer(int row, engine::LayerType type);
    void removeLayer(int row);
    void moveLayer(int row, int delta); // -1 up, +1 down

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role) override;

    // Whether a layer of this type has this field (the cells it may edit).
    static bool hasField(engine::LayerType type, int column);

signals:
    // The user changed the list (not setLayers/setPreset).
    void edited();

private:
    void replan();
    bool isHead(int row) const { return row >= static_cast<int>(layers_.size()); }

    std::vector<engine::LayerSpec> layers_;
    engine::SampleShape input_{28, 28, 1};
    int classes_ = 10;
    engine::LayerPlan plan_;
};

} // namespace traindeck
