// PluginRegistry (pluginregistry.h): QPluginLoader::metaData() for the listing, instance() only when asked.
#include "pluginregistry.h"

#include <QCoreApplication>
#include <QDir>
#include <QJsonObject>
#include <QPluginLoader>

namespace traindeck {

PluginRegistry::PluginRegistry() = default;
PluginRegistry::~PluginRegistry() = default; // the loaders do not unload: the factories stay valid to the end

QStringList PluginRegistry::default_dirs() {
    const QString app_dir = QCoreApplication::applicationDirPath();
    QStringList dirs = {app_dir + "/../plugins", app_dir + "/../lib/traindeck/plugins",
                        app_dir + "/../lib/x86_64-linux-gnu/traindeck/plugins"};
    if (qEnvironmentVariableIsSet("TRAINDECK_PLUGIN_DIR"))
        dirs.prepend(qEnvironmentVariable("TRAINDECK_PLUGIN_DIR"));
    return dirs;
}

int PluginRegistry::scan(const QStringList& dirs) {
    int kept = 0;
    for (const QString& dir : dirs) {
        for (const QString& file : QDir(dir).entryList({"*.so"}, QDir::Files, QDir::Name)) {
            const QString path = QDir(dir).filePath(file);
            auto loader = std::make_unique<QPluginLoader>(path);
            const QJsonObject meta = loader->metaData();
            if (meta.isEmpty()) {
                problems_ << path + ": not a Qt plugin";
                continue;
            }
            const QString iid = meta.value("IID").toString();
            if (!iid.startsWith("org.traindeck.BackendFactory/"))
                continue; // some other kind of plugin: not ours to judge
            if (iid != QLatin1String(TrainDeckBackendFactory_iid)) {
                problems_ << path + ": built for " + iid + "; this console speaks " + TrainDeckBackendFactory_iid +
                                 " (rebuild or reinstall the plugin with this TrainDeck)";
                continue;
            }
            const QJsonObject data = meta.value("MetaData").toObject();
            Plugin plugin{path, data.value("kind").toString(), data.value("name").toString(),
                          data.value("description").toString(), iid};
            if (plugin.kind.isEmpty()) {
                problems_ << path + ": its metadata names no \"kind\"";
                continue;
            }
            bool taken = false;
            for (const Plugin& other : plugins_)
                taken = taken || other.kind == plugin.kind;
            if (taken) {
                problems_ << path + ": a " + plugin.kind + " plugin was found earlier; this one is not used";
                continue;
            }
            plugins_.push_back(plugin);
            loaders_.push_back(std::move(loader));
            ++kept;
        }
    }
    return kept;
}

BackendFactory* PluginRegistry::factory(const QString& kind) {
    for (size_t i = 0; i < plugins_.size(); ++i) {
        if (plugins_[i].kind != kind)
            continue;
        auto* factory = qobject_cast<BackendFactory*>(loaders_[i]->instance());
        if (!factory) {
            const QString why = plugins_[i].file + ": " + loaders_[i]->errorString();
            if (!problems_.contains(why))
                problems_ << why;
            return nullptr;
        }
        if (factory->kind() != kind) {
            const QString why = plugins_[i].file + ": its metadata says \"" + kind + "\" but its factory makes \"" +
                                factory->kind() + "\"";
            if (!problems_.contains(why))
                problems_ << why;
            return nullptr;
        }
        return factory;
    }
    return nullptr;
}

} // namespace traindeck
