#include "reproduce.h"

#include "linediff.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <map>
#include <set>

namespace traindeck {

namespace {

QString text_of(const QJsonValue& value) {
    if (value.isString())
        return value.toString();
    if (value.isBool())
        return value.toBool() ? QStringLiteral("yes") : QStringLiteral("no");
    if (value.isDouble())
        return QString::number(value.toDouble(), 'g', 15);
    if (value.isArray())
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    if (value.isObject())
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    return {};
}

void compare(QList<CaptureDifference>& out, const QString& what, const QString& before, const QString& after) {
    if (before != after)
        out.push_back({what, before, after});
}

// The keys either object has, sorted.
std::set<QString> keys_of(const QJsonObject& a, const QJsonObject& b) {
    std::set<QString> keys;
    for (auto it = a.begin(); it != a.end(); ++it)
        keys.insert(it.key());
    for (auto it = b.begin(); it != b.end(); ++it)
        keys.insert(it.key());
    return keys;
}

QString gpus_of(const QJsonObject& system) {
    QStringList names;
    for (const auto& gpu : system.value("gpus").toArray())
        names << gpu.toObject().value("name").toString();
    return names.join(", ");
}

QString drivers_of(const QJsonObject& system) {
    QStringList drivers;
    for (const auto& gpu : system.value("gpus").toArray())
        if (const QString driver = gpu.toObject().value("driver").toString(); !drivers.contains(driver))
            drivers << driver;
    return drivers.join(", ");
}

} // namespace

QString package_version(const QJsonObject& package) {
    QString text = package.value("version").toString();
    if (const QString debian = package.value("debian").toString(); !debian.isEmpty())
        text += QStringLiteral(" (Debian %1)")
                    .arg(QStringLiteral("%1 %2").arg(debian, package.value("debian_version").toString()).trimmed());
    return text;
}

EnvironmentDiff diff_captures(const QJsonObject& code_a, const QJsonObject& environment_a, const QJsonObject& code_b,
                              const QJsonObject& environment_b) {
    EnvironmentDiff diff;
    const QJsonObject a = code_a.value("code").toObject(), b = code_b.value("code").toObject();
    for (const char* key : {"kind", "commit", "branch", "remote", "dirty", "snapshot", "cwd"})
        compare(diff.code, QString::fromLatin1(key), text_of(a.value(key)), text_of(b.value(key)));
    compare(diff.code, QStringLiteral("command"), text_of(code_a.value("command")), text_of(code_b.value("command")));
    diff.uncommitted_differs = a.value("diff").toString() != b.value("diff").toString();

    const QJsonObject packages_a = environment_a.value("python").toObject().value("packages").toObject();
    const QJsonObject packages_b = environment_b.value("python").toObject().value("packages").toObject();
    const std::set<QString> names = keys_of(packages_a, packages_b);
    diff.packages_compared = static_cast<int>(names.size());
    for (const QString& name : names)
        compare(diff.packages, name,
                packages_a.contains(name) ? package_version(packages_a.value(name).toObject()) : QString(),
                packages_b.contains(name) ? package_version(packages_b.value(name).toObject()) : QString());

    const QJsonObject system_a = environment_a.value("system").toObject(),
                      system_b = environment_b.value("system").toObject();
    const std::pair<const char*, const char*> fields[] = {
        {"hostname", "host"}, {"os", "OS"},       {"kernel", "kernel"},         {"architecture", "architecture"},
        {"cpu", "CPU"},       {"cores", "cores"}, {"memory_mb", "memory (MB)"}, {"cuda", "CUDA"},
        {"cudnn", "cuDNN"},   {"nccl", "NCCL"}};
    for (const auto& [key, label] : fields)
        compare(diff.system, QString::fromLatin1(label), text_of(system_a.value(key)), text_of(system_b.value(key)));
    compare(diff.system, QStringLiteral("GPUs"), gpus_of(system_a), gpus_of(system_b));
    compare(diff.system, QStringLiteral("GPU driver"), drivers_of(system_a), drivers_of(system_b));
    compare(diff.system, QStringLiteral("TrainDeck"), code_a.value("traindeck").toString(),
            code_b.value("traindeck").toString());
    const QJsonObject python_a = environment_a.value("python").toObject(),
                      python_b = environment_b.value("python").toObject();
    compare(diff.system, QStringLiteral("Python"), python_a.value("version").toString(),
            python_b.value("version").toString());
    compare(diff.system, QStringLiteral("Python interpreter"), python_a.value("executable").toString(),
            python_b.value("executable").toString());
    const QJsonObject engine_a = environment_a.value("engine").toObject(),
                      engine_b = environment_b.value("engine").toObject();
    compare(diff.system, QStringLiteral("engine BLAS"), engine_a.value("blas").toString(),
            engine_b.value("blas").toString());
    compare(diff.system, QStringLiteral("engine GPU path"), engine_a.value("gpu").toString(),
            engine_b.value("gpu").toString());

    // The job's own variables, not the ones the worker sets for each run (job id, folders).
    const QJsonObject env_a = code_a.value("environment").toObject(), env_b = code_b.value("environment").toObject();
    static const QStringList per_run = {"TRAINDECK_JOB_ID", "TRAINDECK_CHECKPOINT_DIR", "TRAINDECK_DATASET_DIR",
                                        "TRAINDECK_RESUME", "TRAINDECK_METRICS_FD"};
    for (const QString& key : keys_of(env_a, env_b))
        if (!per_run.contains(key))
            compare(diff.environment, key, env_a.value(key).toString(), env_b.value(key).toString());
    return diff;
}

QString snapshot_diff(const QByteArray& manifest_a, const QByteArray& manifest_b,
                      const std::function<QByteArray(const QString& sha256, bool second, QString* error)>& chunk,
                      qint64 max_file_bytes) {
    // path -> (sha256, size) of each side.
    const auto files_of = [](const QByteArray& manifest, std::map<QString, std::pair<QString, qint64>>& files) {
        const QJsonObject root = QJsonDocument::fromJson(manifest).object();
        if (!root.value("files").isArray())
            return false;
        for (const auto& file : root.value("files").toArray()) {
            const QJsonObject entry = file.toObject();
            files[entry.value("path").toString()] = {entry.value("sha256").toString(), entry.value("size").toInteger()};
        }
        return true;
    };
    std::map<QString, std::pair<QString, qint64>> a, b;
    if (!files_of(manifest_a, a) || !files_of(manifest_b, b))
        return QStringLiteral("(a snapshot's manifest could not be read)\n");
    std::set<QString> paths;
    for (const auto& [path, file] : a)
        paths.insert(path);
    for (const auto& [path, file] : b)
        paths.insert(path);
    QString out;
    for (const QString& path : paths) {
        const auto in_a = a.find(path), in_b = b.find(path);
        if (in_a != a.end() && in_b != b.end() && in_a->second.first == in_b->second.first)
            continue;
        const QString name_a = in_a == a.end() ? QStringLiteral("/dev/null") : "a/" + path;
        const QString name_b = in_b == b.end() ? QStringLiteral("/dev/null") : "b/" + path;
        out += QStringLiteral("diff --git a/%1 b/%1\n").arg(path);
        const qint64 largest =
            std::max(in_a == a.end() ? 0 : in_a->second.second, in_b == b.end() ? 0 : in_b->second.second);
        if (largest > max_file_bytes) {
            out += QStringLiteral("Files differ (%1 bytes: too large to show here)\n").arg(largest);
            continue;
        }
        QByteArray bytes_a, bytes_b;
        QString error;
        if (in_a != a.end())
            bytes_a = chunk(in_a->second.first, false, &error);
        if (error.isEmpty() && in_b != b.end())
            bytes_b = chunk(in_b->second.first, true, &error);
        if (!error.isEmpty()) {
            out += QStringLiteral("(cannot read it: %1)\n").arg(error);
            continue;
        }
        if (bytes_a.contains('\0') || bytes_b.contains('\0')) {
            out += QStringLiteral("Binary files %1 and %2 differ\n").arg(name_a, name_b);
            continue;
        }
        out += unified_diff(name_a, bytes_a, name_b, bytes_b);
    }
    return out;
}

ReproducePlan plan_reproduction(qint64 job, const QJsonObject& original_request, const QJsonObject& code_capture,
                                const QJsonObject& environment_capture, const QJsonObject& target_resources) {
    ReproducePlan plan;
    if (original_request.isEmpty()) {
        plan.refused = QStringLiteral("the catalog does not hold the request run %1 was submitted with").arg(job);
        return plan;
    }
    QJsonObject request = original_request;
    QJsonObject console = request.value("console").toObject();
    console.remove("migrate");
    console["reproduces"] = job;
    request["console"] = console;
    request["name"] = request.value("name").toString().isEmpty()
                          ? QStringLiteral("rerun of %1").arg(job)
                          : QStringLiteral("%1 (rerun of %2)").arg(request.value("name").toString()).arg(job);
    const bool builtin = request.contains("builtin");
    const QJsonObject code = code_capture.value("code").toObject();
    if (!builtin) {
        const QString snapshot = code.value("snapshot").toString();
        if (code_capture.isEmpty()) {
            plan.refused =
                QStringLiteral("run %1 has no capture of its code (it ran before TrainDeck captured runs, or "
                               "capture was off): rerun it from its folder instead")
                    .arg(job);
            return plan;
        }
        if (snapshot.isEmpty()) {
            plan.refused = code.value("kind").toString() == "none" || code.isEmpty()
                               ? QStringLiteral("run %1 ran in no folder of its own, so no code was captured").arg(job)
                               : QStringLiteral("run %1's code snapshot was not stored: %2")
                                     .arg(job)
                                     .arg(text_of(code.value("problems")));
            return plan;
        }
        request.remove("cwd");
        request["code"] = snapshot;
        request["code_cwd"] = code.value("cwd").toString();
        plan.code = snapshot;
        if (!code.value("complete").toBool(true))
            plan.warnings << QStringLiteral(
                                 "its snapshot lacks %1 file(s) left out for their size or number: the rerun "
                                 "runs without them")
                                 .arg(code.value("left_out_count").toInt());
        QStringList secrets;
        for (const auto& row : code.value("left_out").toArray())
            if (row.toObject().value("why").toString().startsWith("never captured"))
                secrets << row.toObject().value("path").toString();
        if (!secrets.isEmpty())
            plan.warnings << QStringLiteral("never captured, so not in the rerun's folder: %1 (give the job what it "
                                            "needs through its environment)")
                                 .arg(secrets.join(", "));
    }
    // What makes a rerun not bit-identical, known before it starts.
    const QJsonObject engine = environment_capture.value("engine").toObject();
    const QJsonObject target_engine = target_resources.value("engine").toObject();
    if (builtin && (engine.isEmpty() || target_engine.isEmpty()))
        plan.warnings << QStringLiteral(
                             "the %1 engine build is not known, so a bit-identical result cannot be promised")
                             .arg(engine.isEmpty() ? QStringLiteral("original run's") : QStringLiteral("target's"));
    if (builtin && !engine.isEmpty() && !target_engine.isEmpty() &&
        engine.value("gpu").toString() != target_engine.value("gpu").toString())
        plan.warnings << QStringLiteral("the rerun's engine has another GPU path (%1, not %2)")
                             .arg(target_engine.value("gpu").toString(), engine.value("gpu").toString());
    if (builtin && request.value("dataset").toString().isEmpty())
        plan.warnings << QStringLiteral("its data is named by the spec (%1), not a registered dataset version: the "
                                        "rerun reads whatever that name holds on its worker")
                             .arg(
                                 request.value("builtin").toObject().value("data").toObject().value("dataset").toString(
                                     QStringLiteral("fashion-mnist, the default")));
    if (builtin && !engine.isEmpty() && !target_engine.isEmpty()) {
        if (engine.value("blas").toString() != target_engine.value("blas").toString())
            plan.warnings << QStringLiteral("the rerun's engine uses another BLAS (%1, not %2): its weights will "
                                            "differ in the last bits")
                                 .arg(target_engine.value("blas").toString(), engine.value("blas").toString());
        if (engine.value("version").toString() != target_engine.value("version").toString())
            plan.warnings << QStringLiteral("the rerun's engine is version %1, not %2")
                                 .arg(target_engine.value("version").toString(), engine.value("version").toString());
    }
    if (request.value("resources").toObject().value("gpus").toInt() > 0)
        plan.warnings << QStringLiteral("a GPU run is not bit-identical from run to run (atomic additions): expect "
                                        "the same curve within noise, not the same bits");
    if (!builtin) {
        const QString python = environment_capture.value("python").toObject().value("executable").toString();
        if (!python.isEmpty())
            plan.warnings << QStringLiteral("a script runs with the packages of the machine it runs on: compare the "
                                            "two runs' environments afterwards (Compare → Environment)");
    }
    plan.request = request;
    return plan;
}

} // namespace traindeck
