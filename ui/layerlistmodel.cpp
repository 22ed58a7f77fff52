// LayerListModel (layerlistmodel.h): rows are the layers; every edit replans with the trainer's layer plan.
#include "layerlistmodel.h"

#include "jsonbridge.h"

#include <QBrush>
#include <QColor>
#include <QLocale>

#include <nlohmann/json.hpp>

namespace traindeck {

using engine::LayerSpec;
using engine::LayerType;

namespace {

// A new layer of this type at this row: sizes a user would start from.
LayerSpec default_layer(LayerType type, int row) {
    LayerSpec layer{.type = type};
    if (type == LayerType::linear)
        layer.out = 64;
    else if (type == LayerType::conv2d)
        layer = {.type = type, .out = 16, .kernel = 3, .padding = 1};
    else if (type == LayerType::maxpool || type == LayerType::avgpool)
        layer = {.type = type, .stride = 2, .size = 2};
    else if (type == LayerType::dropout)
        layer.p = 0.2f;
    else if (type == LayerType::add)
        layer.from = std::max(0, row - 2); // a block of two layers before it: the usual residual
    return layer;
}

} // namespace

LayerListModel::LayerListModel(QObject* parent) : QAbstractTableModel(parent) { replan(); }

void LayerListModel::setInput(engine::SampleShape input, int classes) {
    beginResetModel();
    input_ = input;
    classes_ = classes;
    replan();
    endResetModel();
}

bool LayerListModel::setLayers(const QJsonArray& layers, QString* problem) {
    std::vector<LayerSpec> parsed;
    if (!layers.isEmpty()) {
        const auto spec = engine::parse_job_spec(nlohmann::json{{"layers", to_nlohmann(layers)}});
        if (!spec) {
            if (problem)
                *problem = QString::fromStdString(spec.error());
            return false;
        }
        parsed = spec->layers;
    }
    beginResetModel();
    layers_ = std::move(parsed);
    replan();
    endResetModel();
    return true;
}

void LayerListModel::setPreset(const QString& model, const QJsonObject& options) {
    nlohmann::json preset{{"model", model.toStdString()}};
    for (const char* key : engine::kPresetKeys)
        if (options.contains(key))
            preset[key] = to_nlohmann(options.value(key));
    auto spec = engine::parse_job_spec(preset);
    if (!spec) // a preset key the trainer refuses: the preset's defaults (Submit says what is wrong)
        spec = engine::parse_job_spec(nlohmann::json{{"model", model.toStdString()}});
    beginResetModel();
    layers_ = spec ? spec->layers : std::vector<LayerSpec>{};
    replan();
    endResetModel();
}

QJsonArray LayerListModel::layersJson() const {
    nlohmann::json array = nlohmann::json::array();
    for (const LayerSpec& layer : layers_)
        array.push_back(engine::layer_spec_to_json(layer));
    return to_qt_array(array);
}

QString LayerListModel::summary() const {
    if (!plan_.ok())
        return tr("Does not fit: %1").arg(QString::fromStdString(plan_.error));
    return tr("%1 trainable parameters; input %2, output %3 classes")
        .arg(QLocale().toString(static_cast<qulonglong>(plan_.parameters)),
             QString::fromStdString(engine::describe_shape(input_)))
        .arg(classes_);
}

void LayerListModel::replan() { plan_ = engine::plan_layers(layers_, input_, classes_); }

void LayerListModel::insertLayer(int row, LayerType type) {
    row = std::clamp(row, 0, static_cast<int>(layers_.size()));
    const LayerSpec layer = default_layer(type, row);
    for (LayerSpec& other : layers_) // adds keep naming the same layers
        if (other.type == LayerType::add && other.from >= row)
            ++other.from;
    beginResetModel();
    layers_.insert(layers_.begin() + row, layer);
    replan();
    endResetModel();
    emit edited();
}

void LayerListModel::removeLayer(int row) {
    if (row < 0 || row >= static_cast<int>(layers_.size()))
        return;
    beginResetModel();
    layers_.erase(layers_.begin() + row);
    for (LayerSpec& other : layers_)
        if (other.type == LayerType::add && other.from > row)
            --other.from;
    replan();
    endResetModel();
    emit edited();
}

void LayerListModel::moveLayer(int row, int delta) {
    const int other = row + delta;
    if (row < 0 || other < 0 || row >= static_cast<int>(layers_.size()) || other >= static_cast<int>(layers_.size()))
        return;
    beginResetModel();
    std::swap(layers_[row], layers_[other]);
    for (LayerSpec& layer : layers_)
        if (layer.type == LayerType::add && (layer.from == row || layer.from == other))
            layer.from = layer.from == row ? other : row;
    replan();
    endResetModel();
    emit edited();
}

bool LayerListModel::hasField(LayerType type, int column) {
    switch (column) {
    case Out:
        return type == LayerType::linear || type == LayerType::conv2d;
    case Kernel:
    case Padding:
        return type == LayerType::conv2d;
    case Stride:
        return type == LayerType::conv2d || type == LayerType::maxpool || type == LayerType::avgpool;
    case Size:
        return type == LayerType::maxpool || type == LayerType::avgpool;
    case Dropout:
        return type == LayerType::dropout;
    case From:
        return type == LayerType::add;
    default:
        return false;
    }
}

int LayerListModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : static_cast<int>(plan_.layers.size());
}

int LayerListModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerListModel::data(const QModelIndex& index, int role) const {
    if (!index.isValid() || index.row() >= rowCount())
        return {};
    const int row = index.row();
    const engine::PlannedLayer& planned = plan_.layers[row];
    const LayerSpec& s = planned.spec;
    const bool broken = plan_.error_layer == row;
    const bool unplanned = plan_.error_layer >= 0 && row > plan_.error_layer;
    if (role == Qt::ToolTipRole)
        return broken        ? QString::fromStdString(plan_.error)
               : isHead(row) ? tr("The classifier head, added because the list does not end in a linear layer")
                             : QVariant();
    if (role == Qt::BackgroundRole && broken)
        return QBrush(QColor(0xf9, 0xde, 0xdc));
    if (role == Qt::ForegroundRole && (isHead(row) || unplanned))
        return QBrush(QColor(0x75, 0x75, 0x75));
    if (role == Qt::TextAlignmentRole && index.column() != Type && index.column() != Output)
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role != Qt::DisplayRole && role != Qt::EditRole)
        return {};
    if (index.column() == Type) {
        const QString name = QString::fromLatin1(engine::to_string(s.type));
        return role == Qt::DisplayRole && isHead(row) ? tr("%1 (head)").arg(name) : name;
    }
    if (index.column() == Output) {
        if (broken)
            return tr("does not fit");
        return unplanned ? QStringLiteral("—") : QString::fromStdString(engine::describe_shape(planned.out));
    }
    if (index.column() == Parameters)
        return unplanned || broken || planned.parameters == 0
                   ? QVariant()
                   : QVariant(QLocale().toString(static_cast<qulonglong>(planned.parameters)));
    if (!hasField(s.type, index.column()))
        return {};
    switch (index.column()) {
    case Out:
        return s.out;
    case Kernel:
        return s.kernel;
    case Stride:
        return s.stride;
    case Padding:
        return s.padding;
    case Size:
        return s.size;
    case Dropout:
        return static_cast<double>(s.p);
    case From:
        return s.from;
    default:
        return {};
    }
}

QVariant LayerListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (role != Qt::DisplayRole)
        return {};
    if (orientation == Qt::Vertical)
        return section;
    static const char* const names[] = {QT_TR_NOOP("Layer"),     QT_TR_NOOP("Out"),  QT_TR_NOOP("Kernel"),
                                        QT_TR_NOOP("Stride"),    QT_TR_NOOP("Pad"),  QT_TR_NOOP("Window"),
                                        QT_TR_NOOP("Dropout"),   QT_TR_NOOP("From"), QT_TR_NOOP("Output"),
                                        QT_TR_NOOP("Parameters")};
    return section >= 0 && section < ColumnCount ? tr(names[section]) : QVariant();
}

Qt::ItemFlags LayerListModel::flags(const QModelIndex& index) const {
    if (!index.isValid())
        return Qt::NoItemFlags;
    Qt::ItemFlags flags = Qt::ItemIsEnabled | Qt::ItemIsSelectable;
    if (isHead(index.row()))
        return flags;
    const LayerType type = layers_[index.row()].type;
    if (index.column() == Type || hasField(type, index.column()))
        flags |= Qt::ItemIsEditable;
    return flags;
}

bool LayerListModel::setData(const QModelIndex& index, const QVariant& value, int role) {
    if (role != Qt::EditRole || !index.isValid() || isHead(index.row()))
        return false;
    LayerSpec& s = layers_[index.row()];
    if (index.column() == Type) {
        const auto type = engine::layer_type_from(value.toString().trimmed().toStdString());
        if (!type)
            return false;
        if (*type == s.type)
            return true;
        beginResetModel();
        s = default_layer(*type, index.row()); // a new type starts from its own defaults
        replan();
        endResetModel();
        emit edited();
        return true;
    }
    if (!hasField(s.type, index.column()))
        return false;
    bool ok = false;
    const double number = value.toDouble(&ok);
    if (!ok)
        return false;
    const int whole = static_cast<int>(number);
    switch (index.column()) {
    case Out:
        s.out = whole;
        break;
    case Kernel:
        s.kernel = whole;
        break;
    case Stride:
        s.stride = whole;
        break;
    case Padding:
        s.padding = whole;
        break;
    case Size:
        s.size = whole;
        break;
    case Dropout:
        s.p = static_cast<float>(number);
        break;
    case From:
        s.from = whole;
        break;
    default:
        return false;
    }
    beginResetModel();
    replan();
    endResetModel();
    emit edited();
    return true;
}

} // namespace traindeck
