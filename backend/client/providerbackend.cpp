// ProviderBackend (providerbackend.h): rent, reach, use and release instances; the ledger before every step.
#include "providerbackend.h"

#include "atomicfile.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>
#include <chrono>

namespace traindeck {

namespace {

QString qs(const std::string& text) { return QString::fromStdString(text); }

QString money(double amount) { return QString::number(amount, 'f', 2); }

} // namespace

ProviderBackend::~ProviderBackend() {
    shutdown();
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (reaper_.joinable())
        reaper_.join();
    // The instances live on in the cloud and in the ledger: the next open() reaches them again.
    std::map<QString, InstancePtr> instances;
    {
        std::lock_guard lock(mutex_);
        instances.swap(instances_);
    }
}

namespace {

// TrainDeck's own instance names (td-LABEL-xxxxxxxx, the label checked by the provider file's parser): only they name
// files here. A stray's name is whatever the cloud listed.
bool own_name(const QString& name) {
    static const QRegularExpression pattern(QStringLiteral("^td-[a-z0-9-]+-[0-9a-f]{8}$"));
    return pattern.match(name).hasMatch();
}

} // namespace

double ProviderBackend::now() const { return static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000; }

bool ProviderBackend::note(const RentedInstance& record, QString* error) {
    QString why = tr("no ledger was given");
    if (ledger_ && ledger_->record(record, &why)) {
        emit instancesChanged();
        return true;
    }
    if (error)
        *error = tr("%1: the instance ledger could not be written (%2)").arg(name_, why);
    return false;
}

bool ProviderBackend::open(const QVariantMap& settings, QString* error) {
    auto fail = [&](const QString& why) {
        if (error)
            *error = why;
        return false;
    };
    config_path_ = settings.value("config").toString();
    QFile file(config_path_);
    if (config_path_.isEmpty() || !file.open(QIODevice::ReadOnly))
        return fail(tr("the provider file “%1” cannot be read").arg(config_path_));
    const std::string problem = client::parse_provider_config(file.readAll().toStdString(), &config_);
    if (!problem.empty())
        return fail(tr("%1: %2").arg(config_path_, qs(problem)));
    name_ = settings.value("name").toString();
    if (name_.isEmpty())
        name_ = QFileInfo(config_path_).completeBaseName();
    state_dir_ = settings.value("state_dir").toString();
    if (state_dir_.isEmpty())
        state_dir_ =
            QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/traindeck/providers/" + name_;
    if (!QDir().mkpath(state_dir_ + "/known_hosts"))
        return fail(tr("%1 cannot be made").arg(state_dir_));
    QFile::setPermissions(state_dir_, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    worker_binary_ = settings.value("worker_binary").toString();
    if (worker_binary_.isEmpty())
        worker_binary_ = QCoreApplication::applicationDirPath() + "/traindeck-worker";
    train_binary_ = settings.value("train_binary").toString();
    if (train_binary_.isEmpty())
        train_binary_ = QFileInfo(worker_binary_).absolutePath() + "/traindeck-train";
    if (!ledger_)
        return fail(tr("%1: no instance ledger (nothing may be rented that is not recorded first)").arg(name_));
    QFile uploads(state_dir_ + "/datasets.json");
    if (uploads.open(QIODevice::ReadOnly)) {
        std::lock_guard lock(mutex_);
        const QJsonArray kept = QJsonDocument::fromJson(uploads.readAll()).array();
        for (const auto& entry : kept)
            uploads_.emplace_back(entry.toObject().value("root").toString(),
                                  entry.toObject().value("manifest").toString().toUtf8());
    }
    if (!reconcile(error))
        return false;
    reaper_ = std::thread([this] { reap(); });
    return true;
}

bool ProviderBackend::list_instances(std::vector<std::string>* ids, QString* why) {
    std::string output, failure;
    const std::vector<std::string> list = client::expand_command(config_.list, {{"label", config_.label}}, &failure);
    if (!client::run_provider_command(list, config_.command_timeout_seconds, &output, &failure, &aborting_)) {
        *why = tr("listing its instances failed: %1").arg(qs(failure));
        return false;
    }
    std::vector<std::string> problems;
    *ids = client::parse_instance_list(output, &problems);
    if (!problems.empty()) {
        // An output it cannot read (another format, a warning on stdout) is no list: nothing is concluded from it.
        *why = tr("the list command's output is not one instance id a line (%1)").arg(qs(problems.front()));
        return false;
    }
    return true;
}

std::map<std::string, std::string> ProviderBackend::instance_vars(const RentedInstance& record) const {
    return {{"id", record.id.toStdString()}, {"name", record.name.toStdString()}, {"label", config_.label}};
}

bool ProviderBackend::reconcile(QString* error) {
    std::vector<std::string> listed;
    QString why;
    if (!list_instances(&listed, &why)) {
        if (error)
            *error = tr("%1: %2, so nothing was reached or released").arg(name_, why);
        return false;
    }
    std::set<QString> unclaimed;
    for (const std::string& id : listed)
        unclaimed.insert(qs(id));
    QString ledger_error;
    const QList<RentedInstance> known = ledger_->instances(name_, &ledger_error);
    if (!ledger_error.isEmpty()) {
        if (error)
            *error = tr("%1: the instance ledger cannot be read: %2").arg(name_, ledger_error);
        return false;
    }
    // A create under way in another process of this user (the console while the command line starts, or the other
    // way round) is recorded without its id yet: while one is that young, no listed instance is taken for a stray.
    const double young = config_.boot_timeout_seconds + 2 * config_.command_timeout_seconds;
    bool creating_elsewhere = false;
    for (const RentedInstance& record : known)
        creating_elsewhere = creating_elsewhere || (record.state == "creating" && now() - record.created < young);
    for (RentedInstance record : known) {
        if (!record.live()) {
            std::lock_guard lock(mutex_);
            gone_[record.name] = tr("instance %1 was %2 (%3)").arg(record.name, record.state, record.reason);
            continue;
        }
        const QString id = record.id.isEmpty() ? record.name : record.id;
        if (record.state == "creating" && now() - record.created < young)
            continue; // its own process finishes it
        if (!unclaimed.contains(id)) {
            record.state = record.id.isEmpty() ? "failed" : "vanished";
            record.reason = record.id.isEmpty()
                                ? tr("the console stopped while it was being created, and the cloud does not list it")
                                : tr("the cloud no longer lists it");
            record.ended = now();
            note(record, nullptr);
            std::lock_guard lock(mutex_);
            gone_[record.name] = tr("instance %1: %2 while the console was away").arg(record.name, record.reason);
            continue;
        }
        unclaimed.erase(id);
        record.id = id;
        auto instance = std::make_shared<Instance>();
        instance->record = record;
        instance->unreached_since = now();
        std::lock_guard lock(mutex_);
        instances_[record.name] = instance;
    }
    // The reaper reaches the instances found (or deletes those it cannot reach within the boot timeout), and
    // finishes deletions under way.
    if (creating_elsewhere)
        unclaimed.clear(); // looked at again at the next start
    // Another provider of this catalog with the same label (an on-demand and a spot file) holds its own live ones.
    for (const RentedInstance& other : ledger_->instances(QString(), &ledger_error))
        if (other.provider != name_ && other.live())
            unclaimed.erase(other.id.isEmpty() ? other.name : other.id);
    for (const QString& stray : unclaimed) {
        RentedInstance record;
        record.provider = name_;
        record.name = stray;
        record.id = stray;
        record.state = "deleting";
        record.reason = tr("a stray: listed with the label “%1”, and not a live instance of this console's ledger")
                            .arg(qs(config_.label));
        record.created = now();
        if (!note(record, error))
            return false;
        auto instance = std::make_shared<Instance>();
        instance->record = record;
        QString delete_error;
        if (!remove(instance, record.reason, &delete_error)) {
            std::lock_guard lock(mutex_);
            instances_[record.name] = instance; // tried again by the reaper
        }
    }
    return true;
}

QString ProviderBackend::describe() const {
    std::lock_guard lock(mutex_);
    double spend = 0;
    for (const auto& [name, instance] : instances_)
        spend += instance->record.price_per_hour;
    return (instances_.size() == 1
                ? tr("provider %1: 1 instance live, $%2/h").arg(name_, money(spend))
                : tr("provider %1: %2 instances live, $%3/h").arg(name_).arg(instances_.size()).arg(money(spend)));
}

std::vector<std::string> ProviderBackend::instance_ssh_options(const QString& name) const {
    // The user's options first: ssh keeps the first value of each. A new instance's host key is learnt on first
    // contact into a file of its own (a rented address is reused by other instances with other keys), and changed
    // keys are still refused.
    std::vector<std::string> options = config_.ssh_options;
    options.push_back("UserKnownHostsFile=" + (state_dir_ + "/known_hosts/" + name).toStdString());
    options.emplace_back("StrictHostKeyChecking=accept-new");
    return options;
}

bool ProviderBackend::reach(const InstancePtr& instance, QString* error) {
    auto backend = std::make_shared<SshWorkerBackend>();
    QStringList options;
    for (const std::string& option : instance_ssh_options(instance->record.name))
        options << qs(option);
    QVariantMap settings{{"host", instance->record.address},
                         {"ssh_options", options},
                         {"install", true},
                         {"price_per_hour", instance->record.price_per_hour},
                         {"worker_binary", worker_binary_},
                         {"train_binary", train_binary_}};
    if (!config_.ssh_config.empty())
        settings["ssh_config"] = qs(config_.ssh_config);
    if (!config_.state_dir.empty())
        settings["state_dir"] = qs(config_.state_dir);
    if (!backend->open(settings, error))
        return false;
    const QString prefix = instance->record.name + "/";
    connect(
        backend.get(), &Backend::eventsArrived, this,
        [this, prefix](const QString& id, const QByteArray& events, bool finished) {
            emit eventsArrived(prefix + id, events, finished);
        },
        Qt::DirectConnection);
    connect(
        backend.get(), &Backend::connectionChanged, this,
        [this, prefix](bool up, const QString& message) { emit connectionChanged(up, prefix + message); },
        Qt::DirectConnection);
    replay_uploads(*backend);
    std::map<QString, qint64> watches;
    {
        std::lock_guard lock(mutex_);
        instance->backend = backend;
        instance->unreached_since = 0;
        watches.swap(instance->pending_watch);
    }
    for (const auto& [id, after] : watches)
        backend->watch(id, after);
    return true;
}

void ProviderBackend::replay_uploads(SshWorkerBackend& backend) {
    std::vector<std::pair<QString, QByteArray>> uploads;
    {
        std::lock_guard lock(mutex_);
        uploads = uploads_;
    }
    for (const auto& [root, manifest] : uploads) {
        QString why;
        if (!backend.uploadDataset(root, manifest, {}, &why))
            emit notice(tr("a dataset from %1 could not be sent to a new instance: %2").arg(root, why));
    }
}

ProviderBackend::InstancePtr ProviderBackend::rent(const client::InstanceType& type, QString* error,
                                                   bool* boot_failed) {
    *boot_failed = false;
    auto instance = std::make_shared<Instance>();
    RentedInstance& record = instance->record;
    record.provider = name_;
    record.name =
        QString("td-%1-%2").arg(qs(config_.label)).arg(QRandomGenerator::system()->generate(), 8, 16, QChar('0'));
    record.type = qs(type.name);
    record.price_per_hour = type.price_per_hour;
    record.spot = type.spot;
    record.state = "creating";
    record.created = now();
    {
        // The limits and the slot are taken together, so two submits at once cannot both pass them.
        std::lock_guard lock(mutex_);
        double spend = 0;
        for (const auto& [name, other] : instances_)
            spend += other->record.price_per_hour;
        if (static_cast<int>(instances_.size()) >= config_.max_instances) {
            if (error)
                *error = tr("%1 already has %2 instances, its maximum (max_instances in %3): a job waits for one to be "
                            "free, or release one")
                             .arg(name_)
                             .arg(instances_.size())
                             .arg(config_path_);
            return nullptr;
        }
        if (config_.max_spend_per_hour > 0 && spend + type.price_per_hour > config_.max_spend_per_hour + 1e-9) {
            if (error)
                *error = tr("%1: a new %2 (%3/h) would take the spend to %4/h, over the ceiling of %5/h "
                            "(max_spend_per_hour in %6); nothing was rented")
                             .arg(name_, record.type, money(type.price_per_hour), money(spend + type.price_per_hour),
                                  money(config_.max_spend_per_hour), config_path_);
            return nullptr;
        }
        // Claimed by the submit renting it from the start: no other submit takes it, no reaper finds it idle.
        instance->claims = 1;
        instance->submits = 1;
        instances_[record.name] = instance;
    }
    auto forget = [&] {
        std::lock_guard lock(mutex_);
        instances_.erase(record.name);
    };
    // Recorded before the cloud is asked: a console killed during the create finds it at its next start.
    if (!note(record, error)) {
        forget();
        return nullptr;
    }
    const std::map<std::string, std::string> vars{{"name", record.name.toStdString()},
                                                  {"type", type.name},
                                                  {"label", config_.label},
                                                  {"spot", type.spot ? "spot" : "on-demand"}};
    std::string output, why;
    const std::vector<std::string> create = client::expand_command(config_.create, vars, &why);
    if (!client::run_provider_command(create, config_.command_timeout_seconds, &output, &why, &aborting_)) {
        // It may exist all the same (a timeout): the next start's reconcile deletes it as a stray.
        forget();
        record.state = "failed";
        record.reason = tr("create failed: %1").arg(qs(why));
        record.ended = now();
        note(record, nullptr);
        if (error)
            *error = tr("%1 could not rent a %2: %3").arg(name_, record.type, qs(why));
        return nullptr;
    }
    const std::string id = client::last_word_line(output);
    {
        std::lock_guard lock(mutex_);
        record.id = id.empty() ? record.name : qs(id);
        record.state = "booting";
    }
    note(record, nullptr);
    // Reached within the boot timeout: the address, then ssh, the worker's install and start.
    const double deadline = now() + config_.boot_timeout_seconds;
    QString last = tr("it never answered");
    bool reached = false;
    while (!aborting_.load()) {
        const std::vector<std::string> address = client::expand_command(config_.address, instance_vars(record), &why);
        if (client::run_provider_command(address, config_.command_timeout_seconds, &output, &why, &aborting_)) {
            std::string destination = client::last_word_line(output);
            if (!destination.empty() && !config_.ssh_user.empty() && destination.find('@') == std::string::npos)
                destination.insert(0, config_.ssh_user + "@");
            if (destination.empty()) {
                last = tr("the address command printed no address yet");
            } else {
                {
                    std::lock_guard lock(mutex_);
                    record.address = qs(destination);
                }
                if ((reached = reach(instance, &last)))
                    break;
            }
        } else {
            last = qs(why);
        }
        if (now() >= deadline)
            break;
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, std::chrono::milliseconds(1000), [this] { return stopping_; });
    }
    if (!reached) {
        *boot_failed = true;
        const QString reason = tr("not reached within %1 s: %2").arg(config_.boot_timeout_seconds).arg(last);
        QString delete_error;
        remove(instance, reason, &delete_error);
        if (error)
            *error =
                tr("%1: a new %2 was %3%4")
                    .arg(name_, record.type, reason,
                         delete_error.isEmpty() ? tr("; it was deleted")
                                                : tr("; deleting it failed (%1), it is tried again").arg(delete_error));
        return nullptr;
    }
    {
        std::lock_guard lock(mutex_);
        record.state = "ready";
    }
    note(record, nullptr);
    return instance;
}

bool ProviderBackend::remove(const InstancePtr& instance, const QString& why_deleted, QString* error, bool jobs_lost) {
    // A retry is given the reason as the ledger has it: its earlier failure's note goes, so it does not pile up.
    const QString reason = why_deleted.section(QStringLiteral(" (delete failed: "), 0, 0);
    RentedInstance record;
    std::shared_ptr<SshWorkerBackend> backend;
    {
        std::lock_guard lock(mutex_);
        instance->record.state = "deleting";
        instance->record.reason = reason;
        record = instance->record;
        backend = std::move(instance->backend);
    }
    note(record, nullptr);
    if (backend)
        backend->shutdown();
    backend.reset(); // its forward ends; the worker goes with the machine
    std::string why;
    // A delete that failed because the instance is gone already (another console's, the cloud's own) is done.
    if (!delete_in_cloud(record, &why) && listed(instance)) {
        if (error)
            *error = qs(why);
        std::lock_guard lock(mutex_);
        instance->record.reason = reason + tr(" (delete failed: %1; tried again)").arg(qs(why));
        return false;
    }
    QStringList lost;
    {
        std::lock_guard lock(mutex_);
        instance->record.state = "deleted";
        instance->record.ended = now();
        record = instance->record;
        instances_.erase(record.name);
        gone_[record.name] = tr("instance %1 was deleted: %2").arg(record.name, reason);
        if (jobs_lost)
            for (const QString& id : instance->jobs)
                lost << record.name + "/" + id;
    }
    if (own_name(record.name))
        QFile::remove(state_dir_ + "/known_hosts/" + record.name);
    note(record, nullptr);
    emit notice(tr("%1 deleted (%2): up %3 min, $%4")
                    .arg(record.name, reason)
                    .arg(record.seconds() / 60, 0, 'f', 1)
                    .arg(record.cost(), 0, 'f', 4));
    // Its jobs ended with it (the console ignores those that had ended). An idle one had none unfinished, and their
    // ends have reached the console (the reaper waits for that), so nothing is said of them.
    if (!lost.isEmpty())
        emit jobsLost(lost, tr("instance %1 was deleted: %2").arg(record.name, reason));
    return true;
}

bool ProviderBackend::delete_in_cloud(const RentedInstance& record, std::string* why) {
    std::string output;
    const std::vector<std::string> command = client::expand_command(config_.remove, instance_vars(record), why);
    return client::run_provider_command(command, config_.command_timeout_seconds, &output, why, &aborting_);
}

bool ProviderBackend::listed(const InstancePtr& instance) {
    {
        std::lock_guard lock(mutex_);
        if (instance->record.id.isEmpty())
            return true; // no id, no conclusion
    }
    std::vector<std::string> ids;
    QString why;
    if (!list_instances(&ids, &why))
        return true;
    std::lock_guard lock(mutex_);
    return std::find(ids.begin(), ids.end(), instance->record.id.toStdString()) != ids.end();
}

void ProviderBackend::vanish(const InstancePtr& instance, const QString& reason) {
    RentedInstance record;
    std::shared_ptr<SshWorkerBackend> backend;
    QStringList lost;
    {
        std::lock_guard lock(mutex_);
        instance->record.state = "vanished";
        instance->record.reason = reason;
        instance->record.ended = now();
        record = instance->record;
        backend = std::move(instance->backend);
        instances_.erase(record.name);
        gone_[record.name] = tr("instance %1 vanished: %2").arg(record.name, reason);
        for (const QString& id : instance->jobs)
            lost << record.name + "/" + id;
    }
    note(record, nullptr);
    if (backend)
        backend->shutdown();
    backend.reset();
    // Deleted all the same, in case the list was wrong (its region, a filter): a delete of nothing costs nothing,
    // a machine billing unseen costs a lot.
    std::string delete_error;
    delete_in_cloud(record, &delete_error);
    if (own_name(record.name))
        QFile::remove(state_dir_ + "/known_hosts/" + record.name);
    emit notice(tr("%1 vanished: %2").arg(record.name, reason));
    if (!lost.isEmpty())
        emit jobsLost(lost, tr("instance %1 vanished: %2").arg(record.name, reason));
}

ProviderBackend::InstancePtr ProviderBackend::claim_idle(int gpus, int cpus, long long memory_mb) {
    std::vector<InstancePtr> candidates;
    {
        std::lock_guard lock(mutex_);
        for (const auto& entry : instances_) {
            const InstancePtr& instance = entry.second;
            if (instance->record.state != "ready" || !instance->backend || instance->claims > 0 ||
                instance->release_when_idle)
                continue; // one whose job asked it to go goes: a new job does not inherit that
            const auto type = std::find_if(config_.types.begin(), config_.types.end(),
                                           [&](const auto& t) { return qs(t.name) == instance->record.type; });
            if (type == config_.types.end() || type->gpus < gpus || (type->cpus > 0 && type->cpus < cpus) ||
                (type->memory_mb > 0 && type->memory_mb < memory_mb))
                continue;
            ++instance->claims;
            ++instance->submits;
            candidates.push_back(instance);
        }
    }
    InstancePtr chosen;
    for (const InstancePtr& instance : candidates) {
        std::shared_ptr<SshWorkerBackend> backend;
        {
            std::lock_guard lock(mutex_);
            backend = instance->backend;
        }
        QString why;
        if (!chosen && backend && backend->unfinishedJobs(&why) == 0) {
            chosen = instance; // keeps its claim until the job is there
            continue;
        }
        std::lock_guard lock(mutex_);
        --instance->claims;
    }
    return chosen;
}

QString ProviderBackend::submit(const QJsonObject& original, QString* error) {
    QJsonObject request = original;
    const QJsonObject elastic = request.take("elastic").toObject();
    const QJsonObject needs = request.value("resources").toObject();
    const int gpus = needs.value("gpus").toInt(0), cpus = needs.value("cpus").toInt(0);
    const long long memory_mb = static_cast<long long>(needs.value("memory_mb").toDouble(0));
    std::set<std::string> failed_types;
    QString last_error;
    for (int attempt = 0; attempt < static_cast<int>(config_.types.size()) + 1 && !aborting_.load(); ++attempt) {
        InstancePtr instance = claim_idle(gpus, cpus, memory_mb);
        if (!instance) {
            // The cheapest type that fits and has not failed to boot for this job.
            const client::InstanceType* best = nullptr;
            for (const client::InstanceType& type : config_.types)
                if (type.gpus >= gpus && (type.cpus == 0 || type.cpus >= cpus) &&
                    (type.memory_mb == 0 || type.memory_mb >= memory_mb) && !failed_types.contains(type.name) &&
                    (!best || type.price_per_hour < best->price_per_hour))
                    best = &type;
            if (!best) {
                if (error)
                    *error = last_error.isEmpty()
                                 ? tr("%1 has no instance type with %2 GPUs, %3 CPUs and %4 MB (types in %5)")
                                       .arg(name_)
                                       .arg(gpus)
                                       .arg(cpus)
                                       .arg(memory_mb)
                                       .arg(config_path_)
                                 : last_error;
                return {};
            }
            bool boot_failed = false;
            instance = rent(*best, &last_error, &boot_failed);
            if (!instance) {
                if (!boot_failed) {
                    if (error)
                        *error = last_error;
                    return {};
                }
                failed_types.insert(best->name); // tried on another type
                continue;
            }
        }
        std::shared_ptr<SshWorkerBackend> backend;
        {
            std::lock_guard lock(mutex_);
            backend = instance->backend;
            if (elastic.value("release_after_job").toBool())
                instance->release_when_idle = true;
        }
        if (!backend)
            last_error = tr("it is being released");
        const QString id = backend ? backend->submit(request, &last_error) : QString();
        {
            std::lock_guard lock(mutex_);
            --instance->claims;
            instance->idle_since = 0;
            if (!id.isEmpty())
                instance->jobs.insert(id);
        }
        wake_.notify_all();
        if (id.isEmpty()) {
            if (error)
                *error = tr("%1: %2").arg(instance->record.name, last_error);
            return {};
        }
        return instance->record.name + "/" + id;
    }
    if (error)
        *error = last_error.isEmpty() ? tr("the backend is closing") : last_error;
    return {};
}

std::shared_ptr<SshWorkerBackend> ProviderBackend::backend_of(const QString& remoteId, QString* jobId,
                                                              QString* error) const {
    const qsizetype slash = remoteId.indexOf('/');
    const QString name = remoteId.left(slash);
    *jobId = remoteId.mid(slash + 1);
    std::lock_guard lock(mutex_);
    const auto found = slash > 0 ? instances_.find(name) : instances_.end();
    if (found == instances_.end()) {
        if (error)
            *error = tr("instance %1 of %2 is no longer rented").arg(name, name_);
        return nullptr;
    }
    if (!found->second->backend && error)
        *error = tr("instance %1 is not reached (%2)").arg(name, found->second->record.state);
    return found->second->backend;
}

bool ProviderBackend::cancel(const QString& remoteId, QString* error) {
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend && backend->cancel(id, error);
}

bool ProviderBackend::resume(const QString& remoteId, double newBudget, QString* error) {
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend && backend->resume(id, newBudget, error);
}

bool ProviderBackend::removeJob(const QString& remoteId, qint64* freedBytes, QString* error) {
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend && backend->removeJob(id, freedBytes, error);
}

QString ProviderBackend::fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) {
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend ? backend->fetchCheckpoint(id, dir, error) : QString();
}

void ProviderBackend::watch(const QString& remoteId, qint64 afterSeq) {
    const qsizetype slash = remoteId.indexOf('/');
    if (slash <= 0)
        return;
    std::shared_ptr<SshWorkerBackend> backend;
    {
        std::unique_lock lock(mutex_);
        const QString name = remoteId.left(slash);
        const auto found = instances_.find(name);
        if (found == instances_.end()) {
            // Its instance has ended: nothing more comes of the job there.
            const auto why = gone_.find(name);
            const QString reason =
                why != gone_.end() ? why->second : tr("instance %1 is not in %2's ledger").arg(name, name_);
            lock.unlock();
            emit jobsLost({remoteId}, reason);
            return;
        }
        found->second->jobs.insert(remoteId.mid(slash + 1));
        backend = found->second->backend;
        if (!backend) {
            found->second->pending_watch[remoteId.mid(slash + 1)] = afterSeq; // once it is reached
            return;
        }
    }
    backend->watch(remoteId.mid(slash + 1), afterSeq);
}

QJsonObject ProviderBackend::resources(QString* error) {
    Q_UNUSED(error);
    QJsonArray list;
    double spend = 0;
    int cpus = 0, gpus = 0;
    long long memory_mb = 0;
    for (const RentedInstance& r : instances()) {
        spend += r.price_per_hour;
        for (const client::InstanceType& type : config_.types)
            if (qs(type.name) == r.type) {
                cpus += type.cpus;
                gpus += type.gpus;
                memory_mb += type.memory_mb;
            }
        list.append(QJsonObject{{"name", r.name},
                                {"id", r.id},
                                {"type", r.type},
                                {"address", r.address},
                                {"state", r.state},
                                {"price_per_hour", r.price_per_hour},
                                {"spot", r.spot},
                                {"uptime_s", r.seconds()},
                                {"cost", r.cost()}});
    }
    return QJsonObject{{"provider", name_},
                       {"instances", list},
                       {"spend_per_hour", spend},
                       {"max_spend_per_hour", config_.max_spend_per_hour},
                       {"max_instances", config_.max_instances},
                       {"cpus", cpus},
                       {"gpu_count", gpus},
                       {"memory_mb", static_cast<double>(memory_mb)},
                       {"gpus", QJsonArray()}};
}

QList<RentedInstance> ProviderBackend::instances() const {
    QList<RentedInstance> list;
    std::lock_guard lock(mutex_);
    for (const auto& [name, instance] : instances_)
        list << instance->record;
    return list;
}

bool ProviderBackend::release(const QString& name, QString* error) {
    InstancePtr instance;
    {
        std::lock_guard lock(mutex_);
        const auto found = instances_.find(name);
        if (found == instances_.end()) {
            if (error)
                *error = tr("%1 has no live instance %2").arg(name_, name);
            return false;
        }
        instance = found->second;
        const QString state = instance->record.state;
        if (state == "creating" || state == "booting") {
            // Its create or boot is under way on a submit's thread, which decides its fate: deleted if it fails.
            if (error)
                *error =
                    tr("%1 is still %2: release it once it is ready (or it goes after its idle time)").arg(name, state);
            return false;
        }
        instance->record.state = "deleting"; // no submit claims it from here on
    }
    return remove(instance, tr("released by the user"), error, true);
}

QString ProviderBackend::createSweep(const QJsonObject&, QString* error) {
    if (error)
        *error = tr("sweeps run on one worker, and a provider's instances come and go: run the sweep on a worker");
    return {};
}

QJsonObject ProviderBackend::sweeps(QString*) { return QJsonObject{{"sweeps", QJsonArray()}}; }

QJsonObject ProviderBackend::sweep(const QString& id, QString* error) {
    if (error)
        *error = tr("%1 runs no sweeps (no sweep %2)").arg(name_, id);
    return {};
}

bool ProviderBackend::sweepAction(const QString& id, const QString&, const QJsonObject&, QString* error) {
    sweep(id, error);
    return false;
}

bool ProviderBackend::uploadDataset(const QString& root, const QByteArray& manifest,
                                    const std::function<void(qint64, qint64, double)>& progress, QString* error) {
    std::vector<std::shared_ptr<SshWorkerBackend>> reached;
    QJsonArray kept;
    {
        std::lock_guard lock(mutex_);
        if (std::none_of(uploads_.begin(), uploads_.end(), [&](const auto& u) { return u.second == manifest; }))
            uploads_.emplace_back(root, manifest);
        for (const auto& [r, m] : uploads_)
            kept.append(QJsonObject{{"root", r}, {"manifest", QString::fromUtf8(m)}});
        for (const auto& [name, instance] : instances_)
            if (instance->backend && instance->record.state == "ready")
                reached.push_back(instance->backend);
    }
    std::string why;
    if (!write_file_atomically((state_dir_ + "/datasets.json").toStdString(),
                               QJsonDocument(kept).toJson(QJsonDocument::Compact).toStdString(), 0600, why)) {
        if (error)
            *error = tr("the provider's list of datasets could not be saved: %1").arg(qs(why));
        return false;
    }
    // Each instance rented from now on gets it before its first job; those running now get it here.
    for (const auto& backend : reached)
        if (!backend->uploadDataset(root, manifest, progress, error))
            return false;
    return true;
}

void ProviderBackend::shutdown() {
    aborting_.store(true);
    std::lock_guard lock(mutex_);
    for (const auto& [name, instance] : instances_)
        if (instance->backend)
            instance->backend->shutdown();
    wake_.notify_all();
}

void ProviderBackend::reap() {
    const auto tick =
        std::chrono::milliseconds(static_cast<int>(std::clamp(config_.idle_seconds / 4, 0.25, 10.0) * 1000));
    while (true) {
        std::vector<InstancePtr> live;
        {
            std::unique_lock lock(mutex_);
            wake_.wait_for(lock, tick, [this] { return stopping_; });
            if (stopping_ || aborting_.load())
                return;
            for (const auto& [name, instance] : instances_)
                live.push_back(instance);
        }
        for (const InstancePtr& instance : live) {
            std::shared_ptr<SshWorkerBackend> backend;
            RentedInstance record;
            double unreached_since = 0;
            {
                std::lock_guard lock(mutex_);
                backend = instance->backend;
                record = instance->record;
                unreached_since = instance->unreached_since;
            }
            if (record.state == "deleting") {
                remove(instance, record.reason, nullptr);
                continue;
            }
            if (!backend && unreached_since > 0) {
                // Restored at open(): reached again, or deleted once the boot timeout has passed without an answer.
                QString why;
                if (reach(instance, &why)) {
                    bool released = false;
                    {
                        std::lock_guard lock(mutex_);
                        released = instance->record.state == "deleting"; // released meanwhile: it stays so
                        if (!released)
                            instance->record.state = "ready";
                        record = instance->record;
                    }
                    if (!released)
                        note(record, nullptr);
                } else if (now() - unreached_since > config_.boot_timeout_seconds) {
                    remove(instance, tr("not reached again within %1 s: %2").arg(config_.boot_timeout_seconds).arg(why),
                           nullptr);
                }
                continue;
            }
            if (!backend || record.state != "ready")
                continue;
            uint64_t submits = 0;
            {
                std::lock_guard lock(mutex_);
                submits = instance->submits;
            }
            QString why;
            const int unfinished = backend->unfinishedJobs(&why);
            if (unfinished >= 0) {
                std::lock_guard lock(mutex_);
                instance->unanswered_since = 0;
            }
            if (unfinished < 0) {
                // Not answering: a network that dropped (the forward is being restored), or no machine any more.
                // The cloud's list tells, asked at most every 10 s an instance.
                bool ask = false;
                {
                    std::lock_guard lock(mutex_);
                    ask = now() - instance->listed_at >= 10;
                    if (ask)
                        instance->listed_at = now();
                }
                if (ask && !listed(instance)) {
                    vanish(instance, tr("it stopped answering (%1) and the cloud no longer lists it: a spot instance "
                                        "taken back, or one deleted outside TrainDeck")
                                         .arg(why));
                    continue;
                }
                // Listed but silent (hung, or stopped in the cloud): given the boot timeout, then deleted, its jobs
                // lost (those allowed to move continue elsewhere), so that it does not bill and hold a slot forever.
                double silent_since = 0;
                {
                    std::lock_guard lock(mutex_);
                    if (instance->unanswered_since == 0)
                        instance->unanswered_since = now();
                    silent_since = instance->unanswered_since;
                }
                if (now() - silent_since > config_.boot_timeout_seconds)
                    remove(instance,
                           tr("it stopped answering for %1 s (%2) while the cloud still lists it")
                               .arg(static_cast<int>(now() - silent_since))
                               .arg(why),
                           nullptr, true);
                continue;
            }
            // The console has every job's last events only once their streams ended: until then it is not idle. A
            // stream that never ends (a job the worker does not know) holds it a minute at most: it must not bill on.
            const bool streaming = backend->watching();
            bool release = false;
            {
                std::lock_guard lock(mutex_);
                const bool busy = unfinished > 0 || instance->claims > 0 || instance->submits != submits;
                instance->quiet_since = busy ? 0 : instance->quiet_since == 0 ? now() : instance->quiet_since;
                if (busy || (streaming && now() - instance->quiet_since < 60)) {
                    instance->idle_since = 0;
                } else if (instance->idle_since == 0) {
                    instance->idle_since = now();
                    release = instance->release_when_idle;
                } else {
                    release = instance->release_when_idle || now() - instance->idle_since >= config_.idle_seconds;
                }
                if (release)
                    instance->record.state = "deleting"; // no submit claims it from here on
            }
            if (release)
                remove(instance,
                       instance->release_when_idle
                           ? tr("its job asked for it to go once done")
                           : tr("its queue was empty for %1 s").arg(static_cast<int>(config_.idle_seconds)),
                       nullptr);
        }
    }
}

} // namespace traindeck
