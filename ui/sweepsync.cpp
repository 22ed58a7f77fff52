// SweepSync (sweepsync.h): the polls and actions on the network pool, the catalog's imports on its writer thread; the
// GUI thread only posts, keeps the latest answers and hands them on.
#include "sweepsync.h"

#include "jsonbridge.h"

#include "background.h"
#include "backendref.h"
#include "jobcontroller.h"
#include "jobsync.h"
#include "sweepspec.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QMetaObject>
#include <QPointer>
#include <QTimer>

#include <nlohmann/json.hpp>

#include <cmath>

namespace traindeck {

namespace {

// The trial states in which its job may still write events (and so must be watched).
bool active_trial(const QString& state) { return state == "running" || state == "pausing" || state == "stopping"; }

// The sweep states that still move on their own.
bool settled_sweep(const QString& state) { return state == "finished" || state == "stopped" || state == "budget"; }

} // namespace

QJsonObject sweep_trial_request(const QJsonObject& spec_object, qint64 sweep_id, const QJsonObject& params, int trial,
                                QString* error) {
    sweep::SweepSpec spec;
    if (const std::string why = sweep::parse_sweep_spec(to_nlohmann(spec_object), spec); !why.empty()) {
        *error = QObject::tr("the sweep's spec cannot be read here (%1); update the console")
                     .arg(QString::fromStdString(why));
        return {};
    }
    nlohmann::json base = spec.base;
    sweep::Params values;
    for (auto it = params.begin(); it != params.end(); ++it)
        values[it.key().toStdString()] = to_nlohmann(it.value());
    if (base.contains("builtin") && base["builtin"].is_object()) {
        nlohmann::json& builtin = base["builtin"];
        // As the worker's trials: counting ASHA epochs, a trial is as long as the last rung.
        if (spec.asha.enabled && spec.asha.epochs)
            builtin["epochs"] = static_cast<int>(std::lround(spec.asha.max_resource));
        if (const std::string why = sweep::apply_params(builtin, values); !why.empty()) {
            *error = QObject::tr("base.builtin: %1").arg(QString::fromStdString(why));
            return {};
        }
    }
    nlohmann::json flat = nlohmann::json::object();
    for (const auto& [key, value] : values)
        flat[key] = value;
    if (!base.contains("env") || !base["env"].is_object())
        base["env"] = nlohmann::json::object();
    base["env"]["TRAINDECK_PARAMS"] = flat.dump();
    if (trial > 0) {
        base["env"]["TRAINDECK_SWEEP"] = std::to_string(sweep_id);
        base["env"]["TRAINDECK_TRIAL"] = std::to_string(trial);
        base["name"] = spec.name + " #" + std::to_string(trial);
    } else {
        base["name"] = spec.name + " best";
    }
    return to_qt_object(base);
}

struct SweepSync::Polled {
    bool held = false;   // false: the backend is being let go of (the console is closing)
    bool listed = false; // the list of sweeps came (a detail may still have failed)
    QJsonObject sweeps, prices;
    QHash<qint64, QJsonObject> details;
    QString error;
};

SweepSync::SweepSync(JobSync& sync, JobController& controller, QObject* parent)
    : QObject(parent), sync_(sync), controller_(controller), timer_(new QTimer(this)) {
    connect(timer_, &QTimer::timeout, this, &SweepSync::poll);
}

const QString& SweepSync::backendName() const { return sync_.backendName(); }

void SweepSync::start(int interval_ms) {
    timer_->start(interval_ms);
    poll();
}

void SweepSync::setWatchedSweep(qint64 sweep) {
    const bool changed = watched_sweep_ != sweep;
    watched_sweep_ = sweep;
    if (changed && sweep > 0 && !details_.contains(sweep))
        poll();
}

void SweepSync::poll() {
    if (polling_) {
        poll_again_ = true; // never two polls at once: the one under way is followed by one more
        return;
    }
    polling_ = true;
    const BackendRef ref = BackendRef::of(&sync_.backend());
    // The details worth a request: sweeps that move, that changed since the last answer, or that the user looks at.
    QHash<qint64, QJsonObject> summaries = summaries_;
    const qint64 watched = watched_sweep_;
    const QSet<qint64> known_details(details_.keyBegin(), details_.keyEnd());
    const bool want_prices = prices_.isEmpty() || !prices_age_.isValid() || prices_age_.elapsed() > 60000;
    run_in_background(
        this,
        [ref, summaries, watched, known_details, want_prices] {
            Polled polled;
            const BackendRef::Use backend = ref.use();
            if (!backend)
                return polled;
            polled.held = true;
            QString error;
            polled.sweeps = backend->sweeps(&error);
            if (!error.isEmpty()) {
                polled.error = error;
                return polled;
            }
            polled.listed = true;
            for (const auto& value : polled.sweeps.value("sweeps").toArray()) {
                const QJsonObject summary = value.toObject();
                const qint64 id = summary.value("id").toInteger();
                if (id <= 0)
                    continue;
                const bool wanted = !settled_sweep(summary.value("state").toString()) || id == watched ||
                                    summaries.value(id) != summary || !known_details.contains(id);
                if (!wanted)
                    continue;
                QString detail_error;
                const QJsonObject detail = backend->sweep(QString::number(id), &detail_error);
                if (detail_error.isEmpty())
                    polled.details.insert(id, detail);
                else
                    polled.error = detail_error;
            }
            if (want_prices) {
                QString resources_error;
                const QJsonObject resources = backend->resources(&resources_error);
                polled.prices = resources.value("prices").toObject();
                // What the New sweep dialog's cost preview also needs: how many GPUs a trial with "auto" gets (one
                // where there are any), and whether a cluster gives whole GPUs (no sharing).
                if (!polled.prices.isEmpty()) {
                    polled.prices["gpu_count"] = resources.value("gpus").toArray().size();
                    polled.prices["cluster"] =
                        resources.value("executor").toString().startsWith(QLatin1String("slurm"), Qt::CaseInsensitive);
                }
            }
            return polled;
        },
        [this](const Polled& polled) { finishPoll(polled); });
}

void SweepSync::finishPoll(const Polled& polled) {
    polling_ = false;
    if (!polled.held)
        return;
    if (!polled.prices.isEmpty()) {
        prices_ = polled.prices;
        prices_age_.start();
    }
    if (!polled.error.isEmpty()) {
        // Said once, not every 2 s: the same problem again is no news (a lost connection is JobSync's to say too).
        if (polled.error != last_error_)
            emit failed(tr("The sweeps on %1 could not be read: %2 (retrying every few seconds)")
                            .arg(backendName(), polled.error));
        last_error_ = polled.error;
    } else {
        last_error_.clear();
    }
    if (polled.listed) {
        sweeps_ = polled.sweeps;
        summaries_.clear();
        for (const auto& value : sweeps_.value("sweeps").toArray())
            summaries_.insert(value.toObject().value("id").toInteger(), value.toObject());
        emit sweepsChanged(sweeps_);
    }
    for (auto it = polled.details.begin(); it != polled.details.end(); ++it) {
        // A detail names its own sweep; one that names another is the worker's mistake, not a sweep of ours.
        if (it.value().value("id").toInteger() != it.key())
            continue;
        details_.insert(it.key(), it.value());
        syncTrials(it.key(), it.value());
        emit detailChanged(it.key(), it.value());
    }
    if (std::exchange(poll_again_, false))
        poll();
}

void SweepSync::syncTrials(qint64 sweep, const QJsonObject& detail) {
    struct Trial {
        std::string remote, name;
        nlohmann::json spec, params;
        bool active = false, finished = false;
    };
    std::vector<Trial> trials;
    const QJsonObject spec = detail.value("spec").toObject();
    const QString sweep_name = detail.value("name").toString();
    for (const auto& value : detail.value("trials").toArray()) {
        const QJsonObject trial = value.toObject();
        const qint64 job = trial.value("job").toInteger();
        const int number = trial.value("trial").toInt();
        if (job <= 0 || number <= 0)
            continue; // a trial whose job never started (its reason says why): no run
        const QString remote = QString::number(job);
        const QString state = trial.value("state").toString();
        const bool active = active_trial(state);
        if (settled_.contains(remote) && !active)
            continue;
        QString error;
        const QJsonObject params = trial.value("params").toObject();
        QJsonObject request = sweep_trial_request(spec, sweep, params, number, &error);
        if (request.isEmpty()) // still a run, with what is known: its name and parameters
            request = QJsonObject{
                {"env", QJsonObject{{"TRAINDECK_PARAMS",
                                     QString::fromUtf8(QJsonDocument(params).toJson(QJsonDocument::Compact))}}}};
        const QString name = QStringLiteral("%1 #%2").arg(sweep_name).arg(number);
        request["name"] = name;
        trials.push_back({remote.toStdString(), name.toStdString(), to_nlohmann(request), to_nlohmann(params), active,
                          state != "running" && !active && state != "paused"});
    }
    if (trials.empty())
        return;
    QPointer<SweepSync> self(this);
    const std::string backend = backendName().toStdString();
    const std::string tag = "sweep:" + std::to_string(sweep);
    sync_.writer().post([self, backend, tag, trials = std::move(trials)](Catalog& catalog) {
        struct Watch {
            QString remote;
            qint64 after = 0;
        };
        std::vector<Watch> watches;
        QStringList settled;
        int imported = 0;
        Statement select = catalog.db().prepare("SELECT id FROM jobs WHERE backend=? AND remote_id=?");
        for (const Trial& trial : trials) {
            select.reset();
            select.bind(1, backend).bind(2, trial.remote);
            const QString remote = QString::fromStdString(trial.remote);
            if (!select.step()) {
                const int64_t job = catalog.add_job(trial.name, backend, trial.remote, trial.spec);
                catalog.add_tags(job, {tag});
                // A command's trial has no built-in spec to read its parameters from: they are its config.
                if (!trial.spec.contains("builtin"))
                    catalog.set_config(job, trial.params);
                ++imported;
                watches.push_back({remote, 0});
            } else if (trial.active) {
                watches.push_back({remote, catalog.remote_last_seq(select.integer(0))});
            }
            if (trial.finished)
                settled << remote;
        }
        QMetaObject::invokeMethod(
            self,
            [self, watches, settled, imported] {
                if (!self)
                    return;
                // Watching a watched job does nothing; one whose stream ended (paused, then promoted) streams again.
                for (const Watch& watch : watches)
                    self->sync_.backend().watch(watch.remote, watch.after);
                for (const QString& remote : settled)
                    self->settled_.insert(remote);
                if (imported > 0) {
                    emit self->trialsImported(imported);
                    emit self->sync_.catalogChanged(); // new runs: the window refreshes on its JobSync's signal
                }
            },
            Qt::QueuedConnection);
    });
}

void SweepSync::create(const QJsonObject& spec) {
    const BackendRef ref = BackendRef::of(&sync_.backend());
    struct Created {
        QString id, error;
    };
    run_in_background(
        this,
        [ref, spec] {
            Created answer{{}, tr("the console is closing")};
            if (const BackendRef::Use backend = ref.use()) {
                answer.error.clear();
                answer.id = backend->createSweep(spec, &answer.error);
            }
            return answer;
        },
        [this, name = spec.value("name").toString()](const Created& answer) {
            bool number = false;
            const qint64 id = answer.id.toLongLong(&number);
            if (!number || id <= 0) {
                emit failed(tr("Sweep “%1” not started on %2: %3")
                                .arg(name, backendName(),
                                     answer.error.isEmpty() ? tr("the worker named no sweep id") : answer.error));
                return;
            }
            watched_sweep_ = id;
            emit created(id);
            poll();
        });
}

void SweepSync::stop(qint64 sweep) { act(sweep, QStringLiteral("stop"), {}); }
void SweepSync::resume(qint64 sweep) { act(sweep, QStringLiteral("resume"), {}); }
void SweepSync::extend(qint64 sweep, const QJsonObject& body) { act(sweep, QStringLiteral("extend"), body); }

void SweepSync::act(qint64 sweep, const QString& action, const QJsonObject& body) {
    const BackendRef ref = BackendRef::of(&sync_.backend());
    run_in_background(
        this,
        [ref, sweep, action, body] {
            QString error = tr("the console is closing");
            const BackendRef::Use backend = ref.use();
            return backend && backend->sweepAction(QString::number(sweep), action, body, &error) ? QString() : error;
        },
        [this, sweep, action](const QString& error) {
            if (!error.isEmpty())
                emit failed(tr("Sweep %1 on %2: %3 failed: %4").arg(sweep).arg(backendName(), action, error));
            else
                emit actionDone(sweep, action);
            poll();
        });
}

bool SweepSync::promoteBest(qint64 sweep) {
    const QJsonObject detail = details_.value(sweep);
    const QJsonObject best = detail.value("best").toObject();
    if (best.isEmpty()) {
        emit failed(
            tr("Sweep %1 has no trial with a result yet: promote once one has reported its objective").arg(sweep));
        return false;
    }
    QString error;
    QJsonObject request =
        sweep_trial_request(detail.value("spec").toObject(), sweep, best.value("params").toObject(), 0, &error);
    if (request.isEmpty()) {
        emit failed(tr("The best trial of sweep %1 cannot be promoted: %2").arg(sweep).arg(error));
        return false;
    }
    const QString name =
        QStringLiteral("%1 best (#%2)").arg(detail.value("name").toString()).arg(best.value("trial").toInt());
    request["name"] = name;
    controller_.submit(backendName(), name, request);
    emit promoted(sweep, name);
    return true;
}

} // namespace traindeck
