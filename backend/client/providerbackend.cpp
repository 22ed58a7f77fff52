// ProviderBackend (providerbackend.h): rent, reach, use and release instances; the ledger before every step.
#include "providerbackend.h"

#include "atomicfile.h"
#include "manifest.h"

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

// A dataset manifest's version (its content's hash); "" when it is not one.
QString version_of(const QByteArray& manifest) {
    dataset::Manifest parsed;
    std::string why;
    const nlohmann::json json =
        nlohmann::json::parse(manifest.constData(), manifest.constData() + manifest.size(), nullptr, false);
    return dataset::Manifest::from_json(json, parsed, why) ? qs(parsed.version()) : QString();
}

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
    // Each ends within moments of the abort: its create or ssh is ended, its waits are woken.
    std::vector<Placer> placers;
    {
        std::lock_guard lock(mutex_);
        placers.swap(placers_);
    }
    for (Placer& placer : placers)
        placer.thread.join();
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
    wait_ = settings.value("wait").toBool();
    if (!QDir().mkpath(state_dir_ + "/known_hosts") || !QDir().mkpath(state_dir_ + "/placements"))
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
        for (const auto& entry : kept) {
            const QByteArray manifest = entry.toObject().value("manifest").toString().toUtf8();
            if (const QString version = version_of(manifest); !version.isEmpty())
                uploads_[version] = {entry.toObject().value("root").toString(), manifest};
        }
    }
    // The placements first: reconcile() knows the instances this console was renting for them when it stopped.
    load_placements();
    if (!reconcile(error))
        return false;
    // Those it stopped in the middle of go on (the command line leaves them to the console), each with its claim on
    // its instance, if that was found again, taken before the reaper can find it idle.
    if (!wait_) {
        std::vector<std::pair<QString, InstancePtr>> resumed;
        {
            std::lock_guard lock(mutex_);
            for (const auto& [id, placement] : placements_) {
                if (placement.state != "placing")
                    continue;
                const auto found = instances_.find(placement.instance);
                InstancePtr instance = found == instances_.end() ? nullptr : found->second;
                if (instance) {
                    ++instance->claims;
                    ++instance->submits;
                }
                resumed.emplace_back(id, instance);
            }
        }
        for (const auto& [id, instance] : resumed)
            start_placer(id, instance);
        // A month on, a placed job whose instance has gone is forgotten with its placement.
        std::vector<QString> forgotten;
        {
            std::lock_guard lock(mutex_);
            for (auto it = placements_.begin(); it != placements_.end();) {
                if (it->second.state == "placed" && now() - it->second.created > 30 * 86400.0 &&
                    !instances_.contains(it->second.instance)) {
                    forgotten.push_back(it->first);
                    placed_.erase(it->second.instance + "/" + it->second.job);
                    it = placements_.erase(it);
                } else {
                    ++it;
                }
            }
        }
        for (const QString& id : forgotten)
            QFile::remove(state_dir_ + "/placements/" + id + ".json");
    }
    reaper_ = std::thread([this] { reap(); });
    return true;
}

void ProviderBackend::start_placer(const QString& id, const InstancePtr& instance) {
    std::vector<Placer> finished;
    {
        std::lock_guard lock(mutex_);
        for (auto it = placers_.begin(); it != placers_.end();)
            if (it->done->load()) {
                finished.push_back(std::move(*it));
                it = placers_.erase(it);
            } else {
                ++it;
            }
        Placer placer;
        placer.done = std::make_shared<std::atomic<bool>>(false);
        placer.thread = std::thread([this, id, instance, done = placer.done] {
            place(id, instance);
            done->store(true);
        });
        placers_.push_back(std::move(placer));
    }
    for (Placer& placer : finished)
        placer.thread.join(); // done: at once
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
    // This console's own placements name the instances it was renting when it stopped: none of those is another's.
    std::set<QString> ours;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, placement] : placements_)
            if (placement.state == "placing")
                ours.insert(placement.instance);
    }
    auto elsewhere = [&](const RentedInstance& record) {
        return record.state == "creating" && now() - record.created < young && !ours.contains(record.name);
    };
    bool creating_elsewhere = false;
    for (const RentedInstance& record : known)
        creating_elsewhere = creating_elsewhere || elsewhere(record);
    for (RentedInstance record : known) {
        if (!record.live()) {
            std::lock_guard lock(mutex_);
            gone_[record.name] = tr("instance %1 was %2 (%3)").arg(record.name, record.state, record.reason);
            continue;
        }
        const QString id = record.id.isEmpty() ? record.name : record.id;
        if (elsewhere(record))
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
        if (record.state == "creating")
            record.state = "booting"; // the cloud lists it: it was made
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
    {
        // shutdown() ends its open() under way (an ssh, an install, a start).
        std::lock_guard lock(mutex_);
        instance->connecting = backend;
    }
    if (aborting_.load())
        backend->shutdown();
    const bool opened = backend->open(settings, error);
    {
        std::lock_guard lock(mutex_);
        instance->connecting.reset();
    }
    if (!opened)
        return false;
    const QString prefix = instance->record.name + "/";
    connect(
        backend.get(), &Backend::eventsArrived, this,
        [this, prefix](const QString& id, const QByteArray& events, bool finished) {
            emit eventsArrived(console_id(prefix + id), events, finished);
        },
        Qt::DirectConnection);
    connect(
        backend.get(), &Backend::connectionChanged, this,
        [this, prefix](bool up, const QString& message) { emit connectionChanged(up, prefix + message); },
        Qt::DirectConnection);
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

ProviderBackend::InstancePtr ProviderBackend::reserve(const client::InstanceType& type, QString* error) {
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
    return instance;
}

bool ProviderBackend::provision(const InstancePtr& instance, QString* error, bool* boot_failed) {
    *boot_failed = false;
    RentedInstance& record = instance->record;
    auto forget = [&] {
        std::lock_guard lock(mutex_);
        instances_.erase(record.name);
    };
    const auto type = std::find_if(config_.types.begin(), config_.types.end(),
                                   [&](const auto& t) { return qs(t.name) == record.type; });
    if (type == config_.types.end()) {
        forget();
        if (error)
            *error = tr("%1 has no type %2 any more (types in %3)").arg(name_, record.type, config_path_);
        return false;
    }
    // Recorded before the cloud is asked: a console killed during the create finds it at its next start.
    if (!note(record, error)) {
        forget();
        return false;
    }
    const std::map<std::string, std::string> vars{{"name", record.name.toStdString()},
                                                  {"type", type->name},
                                                  {"label", config_.label},
                                                  {"spot", type->spot ? "spot" : "on-demand"}};
    std::string output, why;
    const std::vector<std::string> create = client::expand_command(config_.create, vars, &why);
    if (!client::run_provider_command(create, config_.command_timeout_seconds, &output, &why, &aborting_)) {
        // It may exist all the same (a timeout): the next start's reconcile deletes it as a stray.
        forget();
        RentedInstance failed;
        {
            std::lock_guard lock(mutex_);
            record.state = "failed";
            record.reason = tr("create failed: %1").arg(qs(why));
            record.ended = now();
            failed = record;
        }
        note(failed, nullptr);
        if (error)
            *error = tr("%1 could not rent a %2: %3").arg(name_, record.type, qs(why));
        return false;
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
        if (address(instance, &last) && (reached = reach(instance, &last)))
            break;
        if (now() >= deadline)
            break;
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, std::chrono::milliseconds(1000), [this] { return stopping_; });
    }
    if (aborting_.load() && !reached) {
        // The console is closing: the instance stays "booting" in the ledger, and the next start reaches it again
        // (or deletes it after the boot timeout).
        if (error)
            *error = tr("the console closed while %1 was booting").arg(record.name);
        return false;
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
        return false;
    }
    {
        std::lock_guard lock(mutex_);
        record.state = "ready";
    }
    note(record, nullptr);
    return true;
}

bool ProviderBackend::address(const InstancePtr& instance, QString* why) {
    RentedInstance record;
    {
        std::lock_guard lock(mutex_);
        record = instance->record;
    }
    std::string output, failure;
    const std::vector<std::string> command = client::expand_command(config_.address, instance_vars(record), &failure);
    if (!client::run_provider_command(command, config_.command_timeout_seconds, &output, &failure, &aborting_)) {
        *why = qs(failure);
        return false;
    }
    std::string destination = client::last_word_line(output);
    if (destination.empty()) {
        *why = tr("the address command printed no address yet");
        return false;
    }
    if (!config_.ssh_user.empty() && destination.find('@') == std::string::npos)
        destination.insert(0, config_.ssh_user + "@");
    std::lock_guard lock(mutex_);
    instance->record.address = qs(destination);
    return true;
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
    // The ledger says "deleted" before the instance leaves the list: whoever sees the list without it finds the
    // ledger done. Meanwhile it stays "deleting" here, which nothing claims.
    {
        std::lock_guard lock(mutex_);
        record = instance->record;
    }
    record.state = "deleted";
    record.ended = now();
    note(record, nullptr);
    QStringList lost;
    {
        std::lock_guard lock(mutex_);
        instance->record.state = "deleted";
        instance->record.ended = record.ended;
        record = instance->record;
        instances_.erase(record.name);
        gone_[record.name] = tr("instance %1 was deleted: %2").arg(record.name, reason);
        if (jobs_lost)
            for (const QString& id : instance->jobs) {
                const auto placed = placed_.find(record.name + "/" + id);
                lost << (placed == placed_.end() ? record.name + "/" + id : placed->second);
            }
    }
    if (own_name(record.name))
        QFile::remove(state_dir_ + "/known_hosts/" + record.name);
    emit instancesChanged();
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
        for (const QString& id : instance->jobs) {
            const auto placed = placed_.find(record.name + "/" + id);
            lost << (placed == placed_.end() ? record.name + "/" + id : placed->second);
        }
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

const client::InstanceType* ProviderBackend::cheapest(int gpus, int cpus, long long memory_mb,
                                                      const std::set<std::string>& failed) const {
    const client::InstanceType* best = nullptr;
    for (const client::InstanceType& type : config_.types)
        if (type.gpus >= gpus && (type.cpus == 0 || type.cpus >= cpus) &&
            (type.memory_mb == 0 || type.memory_mb >= memory_mb) && !failed.contains(type.name) &&
            (!best || type.price_per_hour < best->price_per_hour))
            best = &type;
    return best;
}

QString ProviderBackend::run_on(const InstancePtr& instance, const QJsonObject& request, bool release_after_job,
                                QString* error) {
    std::shared_ptr<SshWorkerBackend> backend;
    {
        std::lock_guard lock(mutex_);
        backend = instance->backend;
        if (release_after_job)
            instance->release_when_idle = true;
    }
    QString why = tr("it is being released");
    const bool sent = backend && send_uploads(*backend, request, &why);
    QString id = sent ? backend->submit(request, &why) : QString();
    {
        std::lock_guard lock(mutex_);
        --instance->claims;
        instance->idle_since = 0;
        if (!id.isEmpty())
            instance->jobs.insert(id);
    }
    wake_.notify_all();
    if (id.isEmpty() && error)
        *error = tr("%1: %2").arg(instance->record.name, why);
    // A moved job's checkpoint was for it alone: once it is on its instance, the list lets it go.
    const QString checkpoint = request.value("checkpoint_from").toString();
    bool dropped = false;
    if (!id.isEmpty() && !checkpoint.isEmpty()) {
        std::lock_guard lock(mutex_);
        dropped = uploads_.erase(checkpoint) > 0;
    }
    if (dropped)
        save_uploads(nullptr);
    return id;
}

bool ProviderBackend::send_uploads(SshWorkerBackend& backend, const QJsonObject& request, QString* error) {
    for (const char* key : {"dataset", "checkpoint_from"}) {
        const QString version = request.value(key).toString();
        std::pair<QString, QByteArray> upload;
        {
            std::lock_guard lock(mutex_);
            const auto found = uploads_.find(version);
            if (version.isEmpty() || found == uploads_.end())
                continue; // none, or one the instance's worker is to have some other way
            upload = found->second;
        }
        QString why;
        if (!backend.uploadDataset(upload.first, upload.second, {}, &why)) {
            if (error)
                *error = tr("version %1 from %2 could not be sent there: %3").arg(version.left(12), upload.first, why);
            return false;
        }
    }
    return true;
}

bool ProviderBackend::save_uploads(QString* error) {
    QJsonArray kept;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [version, upload] : uploads_)
            kept.append(QJsonObject{
                {"version", version}, {"root", upload.first}, {"manifest", QString::fromUtf8(upload.second)}});
    }
    std::string why;
    if (write_file_atomically((state_dir_ + "/datasets.json").toStdString(),
                              QJsonDocument(kept).toJson(QJsonDocument::Compact).toStdString(), 0600, why))
        return true;
    if (error)
        *error = tr("the provider's list of datasets could not be saved: %1").arg(qs(why));
    return false;
}

namespace {

struct Needs {
    int gpus = 0, cpus = 0;
    long long memory_mb = 0;
};

Needs needs_of(const QJsonObject& request) {
    const QJsonObject needs = request.value("resources").toObject();
    return {needs.value("gpus").toInt(0), needs.value("cpus").toInt(0),
            static_cast<long long>(needs.value("memory_mb").toDouble(0))};
}

bool placement_id(const QString& id) {
    static const QRegularExpression pattern(QStringLiteral("^p-[0-9a-f]{16}$"));
    return pattern.match(id).hasMatch();
}

} // namespace

QString ProviderBackend::submit(const QJsonObject& original, QString* error) {
    QJsonObject request = original;
    const bool release_after_job = request.take("elastic").toObject().value("release_after_job").toBool();
    const Needs needs = needs_of(request);
    if (aborting_.load()) {
        if (error)
            *error = tr("the backend is closing");
        return {};
    }
    // An instance that is up and has nothing to do takes it now.
    if (const InstancePtr instance = claim_idle(needs.gpus, needs.cpus, needs.memory_mb)) {
        const QString id = run_on(instance, request, release_after_job, error);
        return id.isEmpty() ? QString() : instance->record.name + "/" + id;
    }
    const client::InstanceType* best = cheapest(needs.gpus, needs.cpus, needs.memory_mb, {});
    if (!best) {
        if (error)
            *error = tr("%1 has no instance type with %2 GPUs, %3 CPUs and %4 MB (types in %5)")
                         .arg(name_)
                         .arg(needs.gpus)
                         .arg(needs.cpus)
                         .arg(needs.memory_mb)
                         .arg(config_path_);
        return {};
    }
    // The limits are checked, and the slot taken, now: a refusal is the submit's answer.
    const InstancePtr instance = reserve(*best, error);
    if (!instance)
        return {};
    Placement placement;
    placement.id = QString("p-%1%2")
                       .arg(QRandomGenerator::system()->generate(), 8, 16, QChar('0'))
                       .arg(QRandomGenerator::system()->generate(), 8, 16, QChar('0'));
    placement.state = "placing";
    placement.instance = instance->record.name;
    placement.request = request;
    placement.release_after_job = release_after_job;
    placement.created = now();
    {
        std::lock_guard lock(mutex_);
        placements_[placement.id] = placement;
    }
    if (!save_placement(placement.id, error)) {
        std::lock_guard lock(mutex_);
        placements_.erase(placement.id);
        instances_.erase(placement.instance);
        return {};
    }
    if (wait_) {
        place(placement.id, instance);
        std::lock_guard lock(mutex_);
        const Placement done = placements_[placement.id];
        placements_.erase(placement.id);
        placed_.erase(done.instance + "/" + done.job);
        if (done.state == "placed")
            return done.instance + "/" + done.job;
        if (error)
            *error = done.reason.isEmpty() ? tr("the backend is closing") : done.reason;
        return {};
    }
    start_placer(placement.id, instance);
    return placement.id;
}

std::optional<ProviderBackend::Placement> ProviderBackend::placement_copy(const QString& id) const {
    std::lock_guard lock(mutex_);
    const auto found = placements_.find(id);
    return found == placements_.end() ? std::nullopt : std::optional<Placement>(found->second);
}

void ProviderBackend::let_go(const InstancePtr& instance) {
    {
        std::lock_guard lock(mutex_);
        if (instance->record.state == "creating" && instance->record.id.isEmpty() &&
            instances_.contains(instance->record.name) && instances_[instance->record.name] == instance)
            instances_.erase(instance->record.name); // reserved only: the cloud was never asked, the ledger never told
        else
            --instance->claims; // it idles out, or takes the next job
    }
    wake_.notify_all();
}

void ProviderBackend::place(const QString& id, InstancePtr instance) {
    const std::optional<Placement> start = placement_copy(id);
    if (!start) {
        if (instance)
            let_go(instance);
        return;
    }
    const Needs needs = needs_of(start->request);
    auto cancelled = [&] {
        const std::optional<Placement> now = placement_copy(id);
        return !now || now->state == "cancelled";
    };
    // Failed for good, unless the console is closing: then it stays "placing", and the next start goes on with it.
    auto fail = [&](const QString& why) {
        if (instance)
            let_go(instance);
        if (!aborting_.load())
            end_placement(id, "failed", why);
    };
    std::set<std::string> failed_types;
    QString error;
    while (!aborting_.load()) {
        if (cancelled()) {
            if (instance)
                let_go(instance);
            return;
        }
        if (instance && instance->record.state != "creating") {
            // Restored at the console's start (claimed for this job then): reached again by the reaper, or gone.
            bool ready = false, gone = false;
            while (!ready && !gone && !aborting_.load()) {
                std::unique_lock lock(mutex_);
                ready = instance->backend && instance->record.state == "ready";
                const auto found = instances_.find(instance->record.name);
                gone = found == instances_.end() || found->second != instance || instance->record.state == "deleting";
                if (!ready && !gone)
                    wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_; });
            }
            if (aborting_.load())
                break;
            if (gone) {
                let_go(instance);
                instance = nullptr;
            }
        }
        if (!instance)
            instance = claim_idle(needs.gpus, needs.cpus, needs.memory_mb);
        if (!instance) {
            const client::InstanceType* best = cheapest(needs.gpus, needs.cpus, needs.memory_mb, failed_types);
            if (!best) {
                fail(error.isEmpty() ? tr("%1 has no instance type that fits it").arg(name_) : error);
                return;
            }
            instance = reserve(*best, &error);
            if (!instance) {
                fail(error);
                return;
            }
            {
                std::lock_guard lock(mutex_);
                const auto found = placements_.find(id);
                if (found != placements_.end())
                    found->second.instance = instance->record.name;
            }
            save_placement(id, nullptr);
            continue; // cancelled meanwhile? Then it is let go before the cloud is asked.
        }
        bool creating = false;
        {
            std::lock_guard lock(mutex_);
            creating = instance->record.state == "creating";
        }
        bool boot_failed = false;
        if (creating && !provision(instance, &error, &boot_failed)) {
            if (aborting_.load())
                break;
            // Deleted (a boot that failed) or never made: no claim is left. Tried on another type after a boot.
            failed_types.insert(instance->record.type.toStdString());
            instance = nullptr;
            if (!boot_failed) {
                fail(error);
                return;
            }
            continue;
        }
        if (cancelled()) {
            let_go(instance);
            return;
        }
        const QString job = run_on(instance, start->request, start->release_after_job, &error);
        if (job.isEmpty()) {
            instance = nullptr; // run_on ended its claim
            fail(error);
            return;
        }
        bool was_cancelled = false;
        qint64 after = -1;
        {
            std::lock_guard lock(mutex_);
            const auto found = placements_.find(id);
            // Cancelled while it was being submitted: that was said already, so it is cancelled there too.
            was_cancelled = found == placements_.end() || found->second.state == "cancelled";
            if (!was_cancelled) {
                found->second.state = "placed";
                found->second.instance = instance->record.name;
                found->second.job = job;
                placed_[instance->record.name + "/" + job] = id;
                after = found->second.watch_after;
            }
        }
        if (was_cancelled) {
            QString why;
            if (!cancel(instance->record.name + "/" + job, &why))
                emit notice(tr("job %1 was cancelled while it was being sent to %2, and cancelling it there failed "
                               "(%3): it runs there unseen until its instance goes")
                                .arg(id, instance->record.name, why));
            return;
        }
        QString why;
        if (!save_placement(id, &why))
            emit notice(tr("job %1 runs on %2, but that could not be saved (%3): a restart of the console loses it")
                            .arg(id, instance->record.name, why));
        if (after >= 0)
            watch(id, after);
        return;
    }
    // The console is closing: the placement stays "placing", and the next start goes on with it.
}

bool ProviderBackend::end_placement(const QString& id, const QString& state, const QString& reason) {
    Placement ended;
    {
        std::lock_guard lock(mutex_);
        const auto found = placements_.find(id);
        if (found == placements_.end() || found->second.state != "placing")
            return false;
        found->second.state = state;
        found->second.reason = reason;
        ended = found->second;
    }
    save_placement(id, nullptr);
    if (state == "failed")
        emit notice(tr("job %1 could not be placed: %2").arg(id, reason));
    if (ended.watch_after >= 0)
        emit_placement_end(ended);
    return true;
}

void ProviderBackend::emit_placement_end(const Placement& placement) {
    if (placement.watch_after >= 1)
        return; // the console has its one event
    const QJsonObject data{{"state", placement.state}, {"reason", placement.reason}};
    const QJsonArray events{QJsonObject{{"seq", 1}, {"time", now()}, {"type", "state"}, {"data", data}}};
    emit eventsArrived(placement.id, QJsonDocument(events).toJson(QJsonDocument::Compact), true);
}

bool ProviderBackend::save_placement(const QString& id, QString* error) {
    if (wait_)
        return true; // it lives within the submit
    // One writer at a time, each with the placement as it is then: an older state never lands after a newer one.
    std::lock_guard files(files_mutex_);
    const std::optional<Placement> placement = placement_copy(id);
    if (!placement)
        return true;
    const QJsonObject kept{{"id", placement->id},
                           {"state", placement->state},
                           {"reason", placement->reason},
                           {"instance", placement->instance},
                           {"job", placement->job},
                           {"request", placement->request},
                           {"release_after_job", placement->release_after_job},
                           {"created", placement->created}};
    std::string why;
    if (write_file_atomically((state_dir_ + "/placements/" + id + ".json").toStdString(),
                              QJsonDocument(kept).toJson(QJsonDocument::Compact).toStdString(), 0600, why))
        return true;
    if (error)
        *error = tr("the job's placement could not be saved: %1").arg(qs(why));
    return false;
}

std::optional<ProviderBackend::Placement> ProviderBackend::read_placement(const QString& path, QString* why) const {
    QFile in(path);
    if (!in.open(QIODevice::ReadOnly)) {
        *why = in.errorString();
        return std::nullopt;
    }
    QJsonParseError parse_error{};
    const QJsonDocument document = QJsonDocument::fromJson(in.readAll(), &parse_error);
    const QJsonObject kept = document.object();
    Placement placement;
    placement.id = kept.value("id").toString();
    placement.state = kept.value("state").toString();
    placement.reason = kept.value("reason").toString();
    placement.instance = kept.value("instance").toString();
    placement.job = kept.value("job").toString();
    placement.request = kept.value("request").toObject();
    placement.release_after_job = kept.value("release_after_job").toBool();
    placement.created = kept.value("created").toDouble();
    const QStringList states{"placing", "placed", "failed", "cancelled"};
    if (!document.isObject())
        *why = tr("not a JSON object (%1)").arg(parse_error.errorString());
    else if (!placement_id(placement.id) || QFileInfo(path).fileName() != placement.id + ".json")
        *why = tr("its \"id\" is not its file's name");
    else if (!states.contains(placement.state))
        *why = tr("its \"state\" is not one of %1").arg(states.join(", "));
    else if (placement.state == "placed" && (placement.job.isEmpty() || placement.instance.isEmpty()))
        *why = tr("it is placed, with no \"instance\" and \"job\"");
    else
        return placement;
    return std::nullopt;
}

void ProviderBackend::load_placements() {
    const QDir dir(state_dir_ + "/placements");
    const double month = 30 * 86400.0;
    for (const QString& file : dir.entryList({"p-*.json"}, QDir::Files)) {
        QString why;
        const std::optional<Placement> placement = read_placement(dir.filePath(file), &why);
        if (!placement) {
            // Left as it is, for whoever looks: its job (if any) is said lost when the console watches it.
            const QString message =
                tr("%1 is not a placement file this console can read (%2): left as it is").arg(dir.filePath(file), why);
            qWarning("%s", qPrintable(message));
            emit notice(message);
            continue;
        }
        // A month on, one that never ran is forgotten: its job has long been settled.
        if (!wait_ && now() - placement->created > month &&
            (placement->state == "failed" || placement->state == "cancelled")) {
            QFile::remove(dir.filePath(file));
            continue;
        }
        std::lock_guard lock(mutex_);
        if (placement->state == "placed")
            placed_[placement->instance + "/" + placement->job] = placement->id;
        placements_[placement->id] = *placement;
    }
}

bool ProviderBackend::refresh_placement(const QString& id) {
    // The command line's view of a placement the console owns: its file as it is now.
    QString why;
    const std::optional<Placement> fresh = read_placement(state_dir_ + "/placements/" + id + ".json", &why);
    if (!fresh)
        return false;
    std::lock_guard lock(mutex_);
    Placement& kept = placements_[id];
    const qint64 watch_after = kept.watch_after;
    kept = *fresh;
    kept.watch_after = watch_after;
    if (kept.state == "placed")
        placed_[kept.instance + "/" + kept.job] = id;
    return true;
}

QString ProviderBackend::resolve(const QString& remoteId, QString* error) const {
    if (!placement_id(remoteId))
        return remoteId;
    std::lock_guard lock(mutex_);
    const auto found = placements_.find(remoteId);
    QString why;
    if (found == placements_.end())
        why = tr("job %1 is not one of %2's placements").arg(remoteId, name_);
    else if (found->second.state == "placed")
        return found->second.instance + "/" + found->second.job;
    else if (found->second.state == "placing")
        why = tr("job %1 waits for its instance %2").arg(remoteId, found->second.instance);
    else
        why = tr("job %1 never ran: %2").arg(remoteId, found->second.reason);
    if (error)
        *error = why;
    return {};
}

QString ProviderBackend::console_id(const QString& instanceJob) const {
    std::lock_guard lock(mutex_);
    const auto found = placed_.find(instanceJob);
    return found == placed_.end() ? instanceJob : found->second;
}

QString ProviderBackend::placement(const QString& remoteId) const { return resolve(remoteId, nullptr); }

std::shared_ptr<SshWorkerBackend> ProviderBackend::backend_of(const QString& remoteId, QString* jobId,
                                                              QString* error) const {
    const QString target = resolve(remoteId, error);
    if (target.isEmpty())
        return nullptr;
    const qsizetype slash = target.indexOf('/');
    const QString name = target.left(slash);
    *jobId = target.mid(slash + 1);
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

QString ProviderBackend::placement_state(const QString& remoteId) {
    if (!placement_id(remoteId))
        return {};
    if (wait_)
        refresh_placement(remoteId); // the console may have moved it on since this process started
    const std::optional<Placement> placement = placement_copy(remoteId);
    return placement ? placement->state : QString();
}

QString ProviderBackend::console_owns(const QString& remoteId) const {
    const std::optional<Placement> placement = placement_copy(remoteId);
    return tr("job %1 is being placed by the console (its instance %2 is being rented): do this there, or once it runs")
        .arg(remoteId, placement ? placement->instance : QString());
}

bool ProviderBackend::cancel(const QString& remoteId, QString* error) {
    const QString state = placement_state(remoteId);
    if (state == "placing" && wait_) {
        if (error)
            *error = console_owns(remoteId);
        return false;
    }
    // Its instance is still being rented: the job ends here; the instance idles out or takes the next one. When it
    // was placed meanwhile, it is cancelled where it runs.
    if (state == "placing" && end_placement(remoteId, "cancelled", tr("cancelled before its instance was up")))
        return true;
    if (placement_state(remoteId) == "cancelled")
        return true;
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend && backend->cancel(id, error);
}

bool ProviderBackend::resume(const QString& remoteId, double newBudget, QString* error) {
    placement_state(remoteId);
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend && backend->resume(id, newBudget, error);
}

bool ProviderBackend::removeJob(const QString& remoteId, qint64* freedBytes, QString* error) {
    const QString state = placement_state(remoteId);
    if (state == "placing") {
        if (error)
            *error =
                wait_ ? console_owns(remoteId) : tr("job %1 waits for its instance: cancel it first").arg(remoteId);
        return false;
    }
    bool removed = false;
    if (state == "failed" || state == "cancelled") {
        // One that never ran has nothing anywhere but its placement's file.
        removed = true;
        if (freedBytes)
            *freedBytes = 0;
    } else {
        QString id;
        const auto backend = backend_of(remoteId, &id, error);
        removed = backend && backend->removeJob(id, freedBytes, error);
    }
    if (removed && !state.isEmpty()) {
        // Its files are gone: so is its placement.
        std::lock_guard files(files_mutex_);
        QFile::remove(state_dir_ + "/placements/" + remoteId + ".json");
        std::lock_guard lock(mutex_);
        const auto found = placements_.find(remoteId);
        if (found != placements_.end()) {
            placed_.erase(found->second.instance + "/" + found->second.job);
            placements_.erase(found);
        }
    }
    return removed;
}

QString ProviderBackend::fetchCheckpoint(const QString& remoteId, const QString& dir, QString* error) {
    placement_state(remoteId);
    QString id;
    const auto backend = backend_of(remoteId, &id, error);
    return backend ? backend->fetchCheckpoint(id, dir, error) : QString();
}

void ProviderBackend::watch(const QString& remoteId, qint64 afterSeq) {
    QString target = remoteId;
    placement_state(remoteId); // the command line: as its file says now
    if (placement_id(remoteId)) {
        Placement ended;
        {
            std::unique_lock lock(mutex_);
            const auto found = placements_.find(remoteId);
            if (found == placements_.end()) {
                lock.unlock();
                emit jobsLost({remoteId}, tr("job %1 is not one of %2's placements").arg(remoteId, name_));
                return;
            }
            Placement& placement = found->second;
            if (placement.state == "placing") {
                placement.watch_after = afterSeq; // watched once it is placed
                return;
            }
            if (placement.state == "placed") {
                target = placement.instance + "/" + placement.job;
            } else {
                placement.watch_after = afterSeq;
                ended = placement;
            }
        }
        if (!ended.id.isEmpty()) {
            emit_placement_end(ended);
            return;
        }
    }
    const qsizetype slash = target.indexOf('/');
    if (slash <= 0)
        return;
    std::shared_ptr<SshWorkerBackend> backend;
    {
        std::unique_lock lock(mutex_);
        const QString name = target.left(slash);
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
        found->second->jobs.insert(target.mid(slash + 1));
        backend = found->second->backend;
        if (!backend) {
            found->second->pending_watch[target.mid(slash + 1)] = afterSeq; // once it is reached
            return;
        }
    }
    backend->watch(target.mid(slash + 1), afterSeq);
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
    Q_UNUSED(progress); // nothing travels now: the instance that runs a job naming it gets it, before the job
    const QString version = version_of(manifest);
    if (version.isEmpty() || !QFileInfo::exists(root)) {
        if (error)
            *error = version.isEmpty() ? tr("the dataset manifest of %1 is not readable").arg(root)
                                       : tr("%1 does not exist: nothing of it can be sent to an instance").arg(root);
        return false;
    }
    {
        std::lock_guard lock(mutex_);
        uploads_[version] = {root, manifest};
    }
    return save_uploads(error);
}

void ProviderBackend::cancelUploads() {
    std::lock_guard lock(mutex_);
    for (const auto& [name, instance] : instances_)
        if (instance->backend)
            instance->backend->cancelUploads();
}

void ProviderBackend::shutdown() {
    aborting_.store(true);
    std::lock_guard lock(mutex_);
    for (const auto& [name, instance] : instances_) {
        if (instance->backend)
            instance->backend->shutdown();
        if (instance->connecting)
            instance->connecting->shutdown();
    }
    wake_.notify_all();
}

void ProviderBackend::follow_placements() {
    std::vector<QString> watched;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, placement] : placements_)
            if (placement.state == "placing" && placement.watch_after >= 0)
                watched.push_back(id);
    }
    for (const QString& id : watched) {
        if (!refresh_placement(id))
            continue;
        const std::optional<Placement> placement = placement_copy(id);
        if (!placement || placement->state == "placing")
            continue;
        if (placement->state == "placed")
            watch(id, placement->watch_after);
        else
            emit_placement_end(*placement);
    }
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
        if (wait_)
            follow_placements();
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
                // One whose address was not known yet when the console stopped asks the cloud for it first.
                QString why;
                if ((!record.address.isEmpty() || address(instance, &why)) && reach(instance, &why)) {
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
