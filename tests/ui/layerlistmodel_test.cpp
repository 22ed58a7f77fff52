// The model builder's table model (ui/layerlistmodel.h) without its dialog: the trainer's shapes and parameter
// counts per row, the row that does not fit, and edits that keep residual adds naming the same layer.
#include "layerlistmodel.h"

#include <gtest/gtest.h>

#include <QJsonObject>

using namespace traindeck;
using engine::LayerType;

namespace {

QString cell(const LayerListModel& model, int row, int column) {
    return model.data(model.index(row, column), Qt::DisplayRole).toString();
}

} // namespace

TEST(LayerListModel, APresetShowsEachLayersShapeAndParametersAndTheHead) {
    LayerListModel model;
    model.setInput({28, 28, 1}, 10);
    model.setPreset("cnn");
    // conv relu maxpool conv relu maxpool flatten linear(128) relu + head
    ASSERT_EQ(model.rowCount(), 10);
    EXPECT_EQ(cell(model, 0, LayerListModel::Type), "conv2d");
    EXPECT_EQ(cell(model, 0, LayerListModel::Output), "26x26x32");
    EXPECT_EQ(cell(model, 0, LayerListModel::Parameters), QLocale().toString(320));
    EXPECT_EQ(cell(model, 2, LayerListModel::Output), "13x13x32");
    EXPECT_EQ(cell(model, 9, LayerListModel::Type), "linear (head)");
    EXPECT_EQ(cell(model, 9, LayerListModel::Output), "10 values");
    EXPECT_FALSE(model.flags(model.index(9, LayerListModel::Out)) & Qt::ItemIsEditable) << "the head is implied";
    EXPECT_FALSE(model.flags(model.index(1, LayerListModel::Out)) & Qt::ItemIsEditable) << "relu has no width";
    EXPECT_TRUE(model.flags(model.index(0, LayerListModel::Kernel)) & Qt::ItemIsEditable);
    EXPECT_TRUE(model.plan().ok());
    EXPECT_TRUE(model.summary().contains("trainable parameters")) << model.summary().toStdString();
}

TEST(LayerListModel, AnEditThatBreaksTheShapesMarksTheRowThatCausesIt) {
    LayerListModel model;
    model.setInput({28, 28, 1}, 10);
    model.setPreset("cnn");
    int edits = 0;
    QObject::connect(&model, &LayerListModel::edited, [&] { ++edits; });
    // A kernel of 20 on the second convolution's 13x13 input.
    ASSERT_TRUE(model.setData(model.index(3, LayerListModel::Kernel), 20, Qt::EditRole));
    EXPECT_EQ(edits, 1);
    EXPECT_FALSE(model.plan().ok());
    EXPECT_EQ(model.plan().error_layer, 3);
    EXPECT_EQ(cell(model, 3, LayerListModel::Output), "does not fit");
    EXPECT_TRUE(model.data(model.index(3, 0), Qt::ToolTipRole).toString().contains("kernel 20 does not fit its 13x13"));
    EXPECT_TRUE(model.data(model.index(3, 0), Qt::BackgroundRole).isValid());
    EXPECT_EQ(cell(model, 5, LayerListModel::Output), "—") << "no shapes after the layer that does not fit";
    EXPECT_TRUE(model.summary().startsWith("Does not fit: layers[3] (conv2d)")) << model.summary().toStdString();
    // Back to 3: fits again, and the JSON says so.
    ASSERT_TRUE(model.setData(model.index(3, LayerListModel::Kernel), 3, Qt::EditRole));
    EXPECT_TRUE(model.plan().ok());
    EXPECT_EQ(model.layersJson().at(3).toObject().value("kernel").toInt(), 3);
}

TEST(LayerListModel, InsertRemoveAndMoveKeepResidualAddsOnTheirLayer) {
    LayerListModel model;
    model.setInput({8, 8, 4}, 3);
    ASSERT_TRUE(model.setLayers(QJsonArray{QJsonObject{{"type", "conv2d"}, {"out", 4}, {"padding", 1}},
                                           QJsonObject{{"type", "relu"}}, QJsonObject{{"type", "add"}, {"from", 0}}}));
    EXPECT_TRUE(model.plan().ok()) << model.plan().error;
    auto from = [&] { return model.layersJson().at(model.layersJson().size() - 1).toObject().value("from").toInt(); };
    model.insertLayer(0, LayerType::batchnorm); // before the named layer: it moves down one
    EXPECT_EQ(from(), 1);
    EXPECT_EQ(cell(model, 3, LayerListModel::From), "1");
    model.moveLayer(1, -1); // the conv up above the batchnorm
    EXPECT_EQ(from(), 0);
    model.removeLayer(1); // the batchnorm, after the named layer: nothing moves
    EXPECT_EQ(from(), 0);
    EXPECT_TRUE(model.plan().ok()) << model.plan().error;
    // A type change starts from that type's defaults and keeps its place.
    ASSERT_TRUE(model.setData(model.index(1, LayerListModel::Type), "dropout", Qt::EditRole));
    EXPECT_EQ(model.layersJson().at(1).toObject().value("type").toString(), "dropout");
    EXPECT_FALSE(model.setData(model.index(1, LayerListModel::Type), "lstm", Qt::EditRole)) << "not a layer";
    QString problem;
    EXPECT_FALSE(model.setLayers(QJsonArray{QJsonObject{{"type", "lstm"}}}, &problem));
    EXPECT_TRUE(problem.contains("unknown layer type \"lstm\"")) << problem.toStdString();
}
