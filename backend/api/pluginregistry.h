#pragma once
// The backend plugins found on disk: each plugin's JSON metadata (kind, name, description) is read without loading
// it, a plugin built for another interface version is refused with a message saying so, and a plugin is loaded
// only when its factory is asked for. One registry serves the console and the tests.
#include "backend.h"

#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

class QPluginLoader;

namespace traindeck {

class PluginRegistry {
public:
    struct Plugin {
        QString file, kind, name, description;
        QString interface_id; // the IID it was built against
    };

    PluginRegistry();
    ~PluginRegistry();
    PluginRegistry(const PluginRegistry&) = delete;
    PluginRegistry& operator=(const PluginRegistry&) = delete;

    // The folders to look in, in order: $TRAINDECK_PLUGIN_DIR first when set, then next to the build tree's
    // binaries, then the installed locations (relative to the running program's folder).
    static QStringList default_dirs();

    // Reads every *.so of the folders; for each kind the first usable plugin wins. Returns how many it kept.
    int scan(const QStringList& dirs);
    // The plugin of that kind, loaded now if it was not yet; nullptr (and why in problems()) when there is none
    // or it does not load.
    BackendFactory* factory(const QString& kind);

    const std::vector<Plugin>& plugins() const { return plugins_; }
    // What was passed over and why ("libx.so: built for org.traindeck.BackendFactory/2; this console speaks …").
    const QStringList& problems() const { return problems_; }

private:
    std::vector<Plugin> plugins_;
    std::vector<std::unique_ptr<QPluginLoader>> loaders_; // one per plugin, same order
    QStringList problems_;
};

} // namespace traindeck
