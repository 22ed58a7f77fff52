// The sweep controller: trials as worker jobs, decided each tick from the rows it keeps (sweeps, sweep_trials) and
// the records the trials' jobs write. Every decision is a pure function of that state (suggest(), asha_promotion()),
// so a restarted worker decides what it would have.
//
// A trial's states: running (its job queued or running), pausing (asked to checkpoint at an ASHA rung), paused
// (stopped at the rung, waiting for a promotion), completed (its job finished), diverged (stopped because its
// objective went NaN/inf or its watched metric passed factor × its best), failed (its job failed or was cancelled
// from outside), stopping / stopped (the sweep was stopped or reached its budget: checkpointed, resumed with the
// sweep), pruned (paused at a rung when the sweep ended: ASHA did not promote it).
#include "sweepcontroller.h"

#include "asha.h"
#include "clock.h"
#include "suggester.h"

#include <algorithm>
#include <cmath>

namespace traindeck::worker {

using nlohmann::json;

namespace {

bool active_state(const std::string& state) { return state == "running" || state == "pausing" || state == "stopping"; }

// The value a record gives a curve named as the catalog names it: a metric record's key, or "split/key" of an eval
// record. A key that is there with null (a NaN or infinity the writer could not put in JSON) is NaN.
bool curve_value(const json& record, const std::string& curve, double& value) {
    const auto type = record.find("type");
    if (type == record.end() || !type->is_string())
        return false;
    std::string key = curve;
    if (*type == "eval") {
        const size_t slash = curve.find('/');
        if (slash == std::string::npos)
            return false;
        const auto split = record.find("split");
        const std::string split_name = split != record.end() && split->is_string() ? split->get<std::string>() : "val";
        if (curve.compare(0, slash, split_name) != 0)
            return false;
        key = curve.substr(slash + 1);
    } else if (*type != "metric") {
        return false;
    }
    const auto it = record.find(key);
    if (it == record.end())
        return false;
    if (it->is_null()) {
        value = NAN;
        return true;
    }
    if (!it->is_number())
        return false;
    value = it->get<double>();
    return true;
}

bool better(double a, double b, bool maximize) { return std::isnan(b) || (maximize ? a > b : a < b); }

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

double as_number(const json& value) { return value.is_number() ? value.get<double>() : NAN; }

} // namespace

SweepController::SweepController(Database& db, SweepHost& host) : db_(db), host_(host) {}

void SweepController::create_tables(Database& db) {
    db.exec(R"(
        CREATE TABLE IF NOT EXISTS sweeps(
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            spec TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            finished REAL NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS sweep_trials(
            sweep INTEGER NOT NULL REFERENCES sweeps(id),
            trial INTEGER NOT NULL,
            job INTEGER NOT NULL,
            params TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            rung INTEGER NOT NULL DEFAULT 0,
            objectives TEXT NOT NULL DEFAULT '[]',
            best REAL,
            last REAL,
            watched_best REAL,
            watched_mean REAL,
            resource REAL NOT NULL DEFAULT 0,
            reports INTEGER NOT NULL DEFAULT 0,
            spend REAL NOT NULL DEFAULT 0,
            gpu_seconds REAL NOT NULL DEFAULT 0,
            PRIMARY KEY(sweep, trial)) WITHOUT ROWID;
    )");
}

void SweepController::load() {
    sweeps_.clear();
    trial_of_job_.clear();
    Statement select = db_.prepare("SELECT id, spec, state, reason, created, finished FROM sweeps ORDER BY id");
    while (select.step()) {
        Sweep sweep;
        sweep.id = select.integer(0);
        sweep.spec_json = json::parse(select.text(1), nullptr, false);
        // Workers before the limit stored any trials_per_gpu: such a sweep goes on with as many as one GPU takes.
        if (sweep.spec_json.is_object() && sweep.spec_json.contains("trials_per_gpu") &&
            sweep.spec_json["trials_per_gpu"].is_number_integer() &&
            sweep.spec_json["trials_per_gpu"].get<int64_t>() > sweep::max_trials_per_gpu) {
            sweep.spec_json["trials_per_gpu"] = sweep::max_trials_per_gpu;
            Statement update = db_.prepare("UPDATE sweeps SET spec=? WHERE id=?");
            update.bind(1, sweep.spec_json.dump()).bind(2, sweep.id);
            update.step();
        }
        if (const std::string error = sweep::parse_sweep_spec(sweep.spec_json, sweep.spec); !error.empty())
            throw std::runtime_error("sweep " + std::to_string(sweep.id) + " has a spec this worker cannot read (" +
                                     error + "); run the worker version that wrote it");
        sweep.state = select.text(2);
        sweep.reason = select.text(3);
        sweep.created = select.real(4);
        sweep.finished = select.real(5);
        if (sweep.spec.asha.enabled)
            sweep.rungs = sweep::asha_rungs(sweep.spec.asha.min_resource, sweep.spec.asha.max_resource,
                                            sweep.spec.asha.reduction_factor);
        sweeps_[sweep.id] = std::move(sweep);
    }
    Statement trials = db_.prepare(
        "SELECT sweep, trial, job, params, state, reason, rung, objectives, best, last, watched_best, resource, "
        "reports, spend, gpu_seconds, watched_mean FROM sweep_trials ORDER BY sweep, trial");
    while (trials.step()) {
        Sweep* sweep = find(trials.integer(0));
        if (!sweep)
            continue;
        Trial trial;
        trial.index = static_cast<int>(trials.integer(1));
        trial.job = trials.integer(2);
        const json params = json::parse(trials.text(3), nullptr, false);
        if (params.is_object())
            for (const auto& [key, value] : params.items())
                trial.params[key] = value;
        trial.state = trials.text(4);
        trial.reason = trials.text(5);
        trial.rung = static_cast<int>(trials.integer(6));
        const json objectives = json::parse(trials.text(7), nullptr, false);
        if (objectives.is_array())
            for (const json& value : objectives)
                trial.objectives.push_back(as_number(value));
        trial.best = trials.is_null(8) ? NAN : trials.real(8);
        trial.last = trials.is_null(9) ? NAN : trials.real(9);
        trial.watched_best = trials.is_null(10) ? NAN : trials.real(10);
        trial.watched_mean = trials.is_null(15) ? NAN : trials.real(15);
        trial.resource = trials.real(11);
        trial.reports = static_cast<int>(trials.integer(12));
        trial.spend = trials.real(13);
        trial.gpu_seconds = trials.real(14);
        if (static_cast<size_t>(trial.index) != sweep->trials.size())
            throw std::runtime_error("sweep " + std::to_string(sweep->id) + " misses trial " +
                                     std::to_string(sweep->trials.size()));
        if (trial.job > 0)
            trial_of_job_[trial.job] = {sweep->id, trial.index};
        sweep->trials.push_back(std::move(trial));
    }
}

json SweepController::describe(Database& db, int64_t id) {
    Statement select =
        db.prepare(id ? "SELECT id, name, spec, state, reason, created, finished FROM sweeps WHERE id=?"
                      : "SELECT id, name, spec, state, reason, created, finished FROM sweeps ORDER BY id");
    if (id)
        select.bind(1, id);
    json sweeps = json::array();
    while (select.step()) {
        const int64_t sweep_id = select.integer(0);
        const json spec = json::parse(select.text(2), nullptr, false);
        sweep::SweepSpec parsed;
        const bool readable = sweep::parse_sweep_spec(spec, parsed).empty();
        json sweep = {{"id", sweep_id},           {"name", select.text(1)},    {"state", select.text(3)},
                      {"reason", select.text(4)}, {"created", select.real(5)}, {"finished", select.real(6)}};
        Statement trials = db.prepare(
            "SELECT trial, job, params, state, reason, rung, objectives, best, last, resource, spend, gpu_seconds "
            "FROM sweep_trials WHERE sweep=? ORDER BY trial");
        trials.bind(1, sweep_id);
        json list = json::array(), best = nullptr;
        double spent = 0, gpu_seconds = 0;
        json counts = json::object();
        while (trials.step()) {
            json trial = {{"trial", trials.integer(0) + 1},
                          {"job", trials.integer(1)},
                          {"params", json::parse(trials.text(2), nullptr, false)},
                          {"state", trials.text(3)},
                          {"reason", trials.text(4)},
                          {"rung", trials.integer(5)},
                          {"objectives", json::parse(trials.text(6), nullptr, false)},
                          {"best", trials.is_null(7) ? json() : json(trials.real(7))},
                          {"last", trials.is_null(8) ? json() : json(trials.real(8))},
                          {"resource", trials.real(9)},
                          {"spend", trials.real(10)},
                          {"gpu_hours", trials.real(11) / 3600.0}};
            spent += trials.real(10);
            gpu_seconds += trials.real(11);
            counts[trials.text(3)] = counts.value(trials.text(3), 0) + 1;
            if (!trials.is_null(7) && readable &&
                (best.is_null() || better(trials.real(7), best["best"].get<double>(), parsed.objective.maximize)))
                best = {{"trial", trials.integer(0) + 1}, {"best", trials.real(7)}, {"params", trial["params"]}};
            list.push_back(std::move(trial));
        }
        sweep["trials_count"] = list.size();
        sweep["trial_states"] = counts;
        sweep["spend"] = spent;
        sweep["gpu_hours"] = gpu_seconds / 3600.0;
        sweep["best"] = best;
        if (readable) {
            sweep["objective"] = {{"metric", parsed.objective.metric},
                                  {"goal", parsed.objective.maximize ? "max" : "min"}};
            sweep["budget"] = parsed.budget;
            sweep["max_trials"] = parsed.max_trials;
        }
        if (id) {
            sweep["spec"] = spec;
            sweep["trials"] = std::move(list);
            sweep["rungs"] = readable && parsed.asha.enabled
                                 ? json(sweep::asha_rungs(parsed.asha.min_resource, parsed.asha.max_resource,
                                                          parsed.asha.reduction_factor))
                                 : json::array();
            return sweep;
        }
        sweeps.push_back(std::move(sweep));
    }
    return id ? json() : json{{"sweeps", sweeps}};
}

SweepController::Sweep* SweepController::find(int64_t id) {
    const auto it = sweeps_.find(id);
    return it == sweeps_.end() ? nullptr : &it->second;
}

SweepController::Answer SweepController::create(const json& spec_json) {
    Sweep sweep;
    if (const std::string error = sweep::parse_sweep_spec(spec_json, sweep.spec); !error.empty())
        return {400, {{"error", error}}};
    sweep.spec_json = sweep::to_json(sweep.spec);
    if (sweep.spec.asha.enabled)
        sweep.rungs = sweep::asha_rungs(sweep.spec.asha.min_resource, sweep.spec.asha.max_resource,
                                        sweep.spec.asha.reduction_factor);
    // The first trial's request, checked as the worker checks a submission: a bad base starts nothing.
    Trial probe;
    if (const std::optional<sweep::Params> first = sweep::suggest(sweep.spec, 0, {}))
        probe.params = *first;
    std::string error;
    trial_request(sweep, probe, error);
    if (!error.empty())
        return {400, {{"error", error}}};
    sweep.state = "running";
    sweep.reason = "starting its first trials";
    sweep.created = wall_seconds();
    Statement insert = db_.prepare("INSERT INTO sweeps(name, spec, state, reason, created) VALUES(?, ?, ?, ?, ?)");
    insert.bind(1, sweep.spec.name).bind(2, sweep.spec_json.dump()).bind(3, sweep.state).bind(4, sweep.reason);
    insert.bind(5, sweep.created);
    insert.step();
    sweep.id = db_.last_insert_id();
    const int64_t id = sweep.id;
    sweeps_[id] = std::move(sweep);
    return {201, {{"id", id}, {"state", "running"}}};
}

SweepController::Answer SweepController::stop(int64_t id) {
    Sweep* sweep = find(id);
    if (!sweep)
        return {404, {{"error", "no sweep " + std::to_string(id)}}};
    if (sweep->state != "running")
        return {409, {{"error", "sweep " + std::to_string(id) + " is already " + sweep->state}}};
    stop_trials(*sweep, StopReason::pause, "stopping");
    set_state(*sweep, "stopped", "stopped by the user; its running trials were checkpointed and resume with it");
    return {202, {{"id", id}, {"state", "stopped"}}};
}

SweepController::Answer SweepController::resume(int64_t id) {
    Sweep* sweep = find(id);
    if (!sweep)
        return {404, {{"error", "no sweep " + std::to_string(id)}}};
    if (sweep->state == "running")
        return {409, {{"error", "sweep " + std::to_string(id) + " is running"}}};
    if (sweep->state == "budget" && remaining_budget(*sweep) <= 0)
        return {422,
                {{"error", "sweep " + std::to_string(id) +
                               " has spent its budget; raise it first (POST "
                               "/v1/sweeps/" +
                               std::to_string(id) + "/extend)"}}};
    set_state(*sweep, "running", "resumed");
    for (Trial& trial : sweep->trials) {
        if (trial.state == "pruned") {
            trial.state = "paused"; // ASHA may promote it now that the sweep goes on
            trial.dirty = true;
        }
        if (trial.state != "stopped")
            continue;
        if (const std::string error = host_.resume_trial(trial.job, remaining_budget(*sweep), "resumed with its sweep");
            !error.empty()) {
            trial.state = "failed";
            trial.reason = "could not be resumed: " + error;
        } else {
            trial.state = "running";
            trial.reason = "resumed with its sweep";
        }
        trial.dirty = true;
    }
    return {202, {{"id", id}, {"state", "running"}}};
}

SweepController::Answer SweepController::extend(int64_t id, const json& body) {
    Sweep* sweep = find(id);
    if (!sweep)
        return {404, {{"error", "no sweep " + std::to_string(id)}}};
    if (!body.is_object())
        return {400, {{"error", "the body must be {\"max_trials\": N, \"budget\": MONEY, \"gpu_hours\": H}"}}};
    json spec = sweep->spec_json;
    for (const auto& [key, value] : body.items()) {
        if (key == "max_trials") {
            if (!value.is_number_integer() || value.get<int64_t>() < static_cast<int64_t>(sweep->trials.size()))
                return {400,
                        {{"error", "max_trials must be a whole number, at least the " +
                                       std::to_string(sweep->trials.size()) + " trials it has"}}};
            spec["max_trials"] = value;
        } else if (key == "budget" || key == "gpu_hours") {
            if (!value.is_number() || value.get<double>() < 0)
                return {400, {{"error", key + " must be a number >= 0 (0: no cap)"}}};
            if (!spec["budget"].is_object())
                spec["budget"] = json::object();
            spec["budget"][key == "budget" ? "money" : "gpu_hours"] = value;
        } else {
            return {400, {{"error", "unknown field \"" + key + "\" (known: max_trials, budget, gpu_hours)"}}};
        }
    }
    sweep::SweepSpec parsed;
    if (const std::string error = sweep::parse_sweep_spec(spec, parsed); !error.empty())
        return {400, {{"error", error}}};
    sweep->spec = parsed;
    sweep->spec_json = sweep::to_json(parsed);
    sweep->dirty = true;
    // A finished sweep with room for more goes on.
    if (sweep->state == "finished" && static_cast<size_t>(parsed.max_trials) > sweep->trials.size())
        return resume(id);
    return {200, {{"id", id}, {"state", sweep->state}, {"spec", sweep->spec_json}}};
}

void SweepController::set_state(Sweep& sweep, const std::string& state, const std::string& reason) {
    sweep.state = state;
    sweep.reason = reason;
    sweep.finished = state == "running" ? 0 : wall_seconds();
    sweep.dirty = true;
}

void SweepController::stop_trials(Sweep& sweep, StopReason why, const std::string& state) {
    for (Trial& trial : sweep.trials) {
        if (!active_state(trial.state))
            continue;
        trial.state = state;
        trial.dirty = true;
        host_.stop_trial(trial.job, why);
    }
}

double SweepController::remaining_budget(const Sweep& sweep) const {
    if (sweep.spec.budget <= 0)
        return 0;
    double spent = 0;
    for (const Trial& trial : sweep.trials)
        spent += trial.spend;
    return std::max(sweep.spec.budget - spent, 0.0);
}

JobRequest SweepController::trial_request(const Sweep& sweep, const Trial& trial, std::string& error) const {
    json base = sweep.spec.base;
    if (base.contains("builtin")) {
        json& builtin = base["builtin"];
        // ASHA counting epochs pauses and promotes by epoch: the trial is as long as the last rung.
        if (sweep.spec.asha.enabled && sweep.spec.asha.epochs && builtin.is_object())
            builtin["epochs"] = static_cast<int>(std::lround(sweep.spec.asha.max_resource));
        if (const std::string why = sweep::apply_params(builtin, trial.params); !why.empty()) {
            error = "base.builtin: " + why;
            return {};
        }
    }
    json params = json::object();
    for (const auto& [key, value] : trial.params)
        params[key] = value;
    if (!base.contains("env") || !base["env"].is_object())
        base["env"] = json::object();
    base["env"]["TRAINDECK_PARAMS"] = params.dump();
    base["env"]["TRAINDECK_SWEEP"] = std::to_string(sweep.id);
    base["env"]["TRAINDECK_TRIAL"] = std::to_string(trial.index + 1);
    base["name"] = sweep.spec.name + " #" + std::to_string(trial.index + 1);
    // One trial per GPU where there are GPUs and the base did not say (CUDA_VISIBLE_DEVICES names the one it gets),
    // or trials_per_gpu of them sharing each GPU when asked. CPU-only machines run trials on their core slots.
    if (host_.gpu_count() > 0) {
        if (!base.contains("resources") || !base["resources"].is_object())
            base["resources"] = json::object();
        json& resources = base["resources"];
        if (!resources.contains("gpus"))
            resources["gpus"] = 1;
        if (sweep.spec.trials_per_gpu > 1 && !resources.contains("gpu_share"))
            resources["gpu_share"] = sweep.spec.trials_per_gpu;
    }
    if (const double left = remaining_budget(sweep); sweep.spec.budget > 0)
        base["budget"] = left;
    JobRequest request;
    if (!parse_job_request(base, request, error))
        error = "base: " + error;
    return request;
}

bool SweepController::start_next(Sweep& sweep, std::vector<int64_t>* touched) {
    if (sweep.trials.size() >= static_cast<size_t>(sweep.spec.max_trials))
        return false;
    std::vector<sweep::Observation> history;
    history.reserve(sweep.trials.size());
    for (const Trial& trial : sweep.trials)
        history.push_back({trial.params, trial.best});
    const int index = static_cast<int>(sweep.trials.size());
    std::optional<sweep::Params> params = sweep::suggest(sweep.spec, index, history);
    if (!params)
        return false; // the space is exhausted
    Trial trial;
    trial.index = index;
    trial.params = std::move(*params);
    trial.dirty = true;
    std::string error;
    const JobRequest request = trial_request(sweep, trial, error);
    if (!error.empty()) {
        trial.state = "failed";
        trial.reason = error;
    } else {
        trial.job = host_.start_trial(request);
        trial.state = "running";
        trial_of_job_[trial.job] = {sweep.id, index};
        touched->push_back(trial.job);
    }
    started_.push_back({sweep.id, index});
    sweep.trials.push_back(std::move(trial));
    return true;
}

bool SweepController::has_running() const {
    return std::any_of(sweeps_.begin(), sweeps_.end(),
                       [](const auto& entry) { return entry.second.state == "running"; });
}

void SweepController::tick(std::vector<int64_t>* touched) {
    started_.clear();
    promoted_.clear();
    for (auto& [id, sweep] : sweeps_)
        if (sweep.state == "running")
            tick_sweep(sweep, touched);
}

void SweepController::tick_sweep(Sweep& sweep, std::vector<int64_t>* touched) {
    const sweep::SweepSpec& spec = sweep.spec;
    double spent = 0, gpu_seconds = 0;
    int active = 0;
    // A diverged trial's job was killed but may not have ended yet: it no longer counts against max_concurrent, but
    // its spend still counts and the sweep is not over until it has ended.
    bool ending = false;
    for (Trial& trial : sweep.trials) {
        const bool diverged = trial.state == "diverged" && trial.job > 0;
        if (active_state(trial.state) || diverged) {
            const SweepHost::TrialJob job = host_.trial_job(trial.job);
            if (!diverged)
                ++active;
            else if (job.known && !is_finished(job.state))
                ending = true;
            if (job.known && (job.spend != trial.spend || job.gpu_seconds != trial.gpu_seconds)) {
                trial.spend = job.spend;
                trial.gpu_seconds = job.gpu_seconds;
                trial.dirty = true;
            }
        }
        spent += trial.spend;
        gpu_seconds += trial.gpu_seconds;
    }
    // The hard cap: every running trial checkpoints and stops; the sweep resumes only with a higher budget.
    const bool money_spent = spec.budget > 0 && spent >= spec.budget;
    const bool hours_spent = spec.budget_gpu_hours > 0 && gpu_seconds / 3600.0 >= spec.budget_gpu_hours;
    if (money_spent || hours_spent) {
        stop_trials(sweep, StopReason::budget, "stopping");
        set_state(sweep, "budget",
                  money_spent ? "its budget of " + number_text(spec.budget) + " is spent (" + number_text(spent) +
                                    "); running trials were checkpointed"
                              : "its " + number_text(spec.budget_gpu_hours) +
                                    " GPU-hours are used; running trials were checkpointed");
        return;
    }
    bool more = true;
    while (active < spec.max_concurrent) {
        if (!sweep.rungs.empty()) {
            std::vector<sweep::RungTrial> rung_trials;
            rung_trials.reserve(sweep.trials.size());
            // Every trial that completed a rung counts in its ranking (running, promoted and finished ones too);
            // only diverged and failed ones leave it. A trial still checkpointing at its rung (or stopped with the
            // sweep) is ranked but cannot be promoted yet: it is passed as if already on its way to the next rung.
            for (const Trial& trial : sweep.trials) {
                const bool waits = trial.state == "pausing" || trial.state == "stopping" || trial.state == "stopped";
                rung_trials.push_back({trial.index, trial.objectives, trial.rung + (waits ? 1 : 0),
                                       trial.state == "diverged" || trial.state == "failed"});
            }
            const sweep::Promotion promotion = sweep::asha_promotion(
                rung_trials, sweep.rungs.size(), spec.asha.reduction_factor, spec.objective.maximize);
            if (promotion.trial >= 0) {
                Trial& trial = sweep.trials[static_cast<size_t>(promotion.trial)];
                const std::string reason = "promoted to rung " + std::to_string(promotion.rung) + " (" +
                                           number_text(sweep.rungs[static_cast<size_t>(promotion.rung)]) +
                                           (spec.asha.epochs ? " epochs)" : " steps)");
                promoted_.push_back({sweep.id, trial.index, trial.rung});
                if (const std::string error = host_.resume_trial(trial.job, remaining_budget(sweep), reason);
                    !error.empty()) {
                    trial.state = "failed";
                    trial.reason = "could not be promoted: " + error;
                } else {
                    trial.state = "running";
                    trial.reason = reason;
                    trial.rung = promotion.rung;
                    touched->push_back(trial.job);
                    ++active;
                }
                trial.dirty = true;
                continue;
            }
        }
        if (!start_next(sweep, touched)) {
            more = false;
            break;
        }
        if (sweep.trials.back().state == "running")
            ++active;
    }
    if (active > 0 || more || ending)
        return;
    // Nothing runs and nothing more will: the sweep is over; trials left at a rung were pruned by ASHA.
    const Trial* best = nullptr;
    for (Trial& trial : sweep.trials) {
        if (trial.state == "paused") {
            trial.state = "pruned";
            trial.reason = "stopped early by ASHA at rung " + std::to_string(trial.rung);
            trial.dirty = true;
        }
        if (!std::isnan(trial.best) && (!best || better(trial.best, best->best, spec.objective.maximize)))
            best = &trial;
    }
    set_state(sweep, "finished",
              std::to_string(sweep.trials.size()) + " trials" +
                  (best ? "; best " + spec.objective.metric + " " + number_text(best->best) + " (trial #" +
                              std::to_string(best->index + 1) + ")"
                        : "; none reported " + spec.objective.metric));
}

SweepController::Trial* SweepController::trial_of(int64_t job, Sweep** sweep) {
    const auto owner = trial_of_job_.find(job);
    if (owner == trial_of_job_.end())
        return nullptr;
    *sweep = find(owner->second.first);
    return *sweep ? &(*sweep)->trials[static_cast<size_t>(owner->second.second)] : nullptr;
}

void SweepController::on_record(int64_t job, std::string_view data) {
    Sweep* sweep = nullptr;
    Trial* found = trial_of(job, &sweep);
    if (!found)
        return;
    Trial& trial = *found;
    if (trial.state != "running")
        return; // a pausing or stopping trial's last lines decide nothing
    const json record = json::parse(data, nullptr, false);
    if (!record.is_object())
        return;
    const sweep::SweepSpec& spec = sweep->spec;
    auto diverge = [&](const std::string& why) {
        trial.state = "diverged";
        trial.reason = why;
        trial.dirty = true;
        host_.stop_trial(job, StopReason::cancel, true);
    };
    const auto step = record.find("step");
    const std::string at = step != record.end() && step->is_number() ? " at step " + step->dump() : "";
    double watched = 0;
    if (curve_value(record, spec.divergence.metric, watched)) {
        if (!std::isfinite(watched))
            return diverge(spec.divergence.metric + " became NaN or infinite" + at);
        // A line over factor × the lowest the moving average has been diverges at once; the average (weight 0.9) keeps
        // one lucky batch from setting the bar.
        if (!std::isnan(trial.watched_best) && trial.watched_best > 0 &&
            watched > spec.divergence.factor * trial.watched_best)
            return diverge(spec.divergence.metric + " " + number_text(watched) + at + " is over " +
                           number_text(spec.divergence.factor) + " × its lowest moving average " +
                           number_text(trial.watched_best));
        trial.watched_mean = std::isnan(trial.watched_mean) ? watched : 0.9 * trial.watched_mean + 0.1 * watched;
        trial.dirty = true;
        if (std::isnan(trial.watched_best) || trial.watched_mean < trial.watched_best) {
            trial.watched_best = trial.watched_mean;
            trial.dirty = true;
        }
    }
    double objective = 0;
    if (!curve_value(record, spec.objective.metric, objective))
        return;
    if (!std::isfinite(objective))
        return diverge(spec.objective.metric + " became NaN or infinite" + at);
    trial.last = objective;
    if (better(objective, trial.best, spec.objective.maximize))
        trial.best = objective;
    ++trial.reports;
    // The resource reached: the record's epoch (or step); a script's evals without an epoch count as one each.
    const auto resource = record.find(spec.asha.epochs ? "epoch" : "step");
    trial.resource = resource != record.end() && resource->is_number() ? resource->get<double>()
                     : spec.asha.epochs                                ? trial.reports
                                                                       : trial.resource;
    trial.dirty = true;
    if (sweep->rungs.empty() || static_cast<size_t>(trial.rung) >= sweep->rungs.size() ||
        trial.resource < sweep->rungs[static_cast<size_t>(trial.rung)] - 1e-9 ||
        trial.objectives.size() > static_cast<size_t>(trial.rung))
        return;
    trial.objectives.push_back(objective);
    if (static_cast<size_t>(trial.rung) + 1 >= sweep->rungs.size())
        return; // the last rung: it trains to its end
    trial.state = "pausing";
    trial.reason = "reached rung " + std::to_string(trial.rung) + " with " + spec.objective.metric + " " +
                   number_text(objective) + "; checkpointing";
    host_.stop_trial(job, StopReason::pause);
}

void SweepController::on_job_state(int64_t job, JobState state) {
    Sweep* sweep = nullptr;
    Trial* found = trial_of(job, &sweep);
    if (!found)
        return;
    Trial& trial = *found;
    switch (state) {
    case JobState::stopped:
        if (trial.state == "pausing") {
            trial.state = "paused";
            trial.reason = "paused at rung " + std::to_string(trial.rung) + " (" + sweep->spec.objective.metric + " " +
                           number_text(trial.objectives.empty() ? NAN : trial.objectives.back()) + ")";
        } else if (trial.state != "diverged") {
            trial.reason =
                trial.state == "stopping" ? "stopped with its sweep; checkpoint kept" : "stopped; checkpoint kept";
            trial.state = "stopped";
        }
        break;
    case JobState::succeeded:
        if (trial.state != "diverged") {
            trial.state = "completed";
            trial.reason = "finished";
        }
        break;
    case JobState::failed:
    case JobState::cancelled:
        if (trial.state != "diverged") {
            trial.state = "failed";
            trial.reason = std::string("its job ") + (state == JobState::failed ? "failed" : "was cancelled");
        }
        break;
    default:
        return; // back in the queue (preempted, retried): still running as far as the sweep goes
    }
    trial.dirty = true;
}

void SweepController::write() {
    const bool any = std::any_of(sweeps_.begin(), sweeps_.end(), [](const auto& entry) {
        return entry.second.dirty || std::any_of(entry.second.trials.begin(), entry.second.trials.end(),
                                                 [](const Trial& t) { return t.dirty; });
    });
    if (!any)
        return;
    Statement update = db_.prepare("UPDATE sweeps SET spec=?, state=?, reason=?, finished=? WHERE id=?");
    Statement upsert = db_.prepare(
        "INSERT OR REPLACE INTO sweep_trials(sweep, trial, job, params, state, reason, rung, objectives, best, last, "
        "watched_best, resource, reports, spend, gpu_seconds, watched_mean) "
        "VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    auto real_or_null = [](Statement& statement, int column, double value) {
        if (std::isnan(value))
            statement.bind_null(column);
        else
            statement.bind(column, value);
    };
    for (auto& [id, sweep] : sweeps_) {
        if (sweep.dirty) {
            update.reset();
            update.bind(1, sweep.spec_json.dump()).bind(2, sweep.state).bind(3, sweep.reason).bind(4, sweep.finished);
            update.bind(5, sweep.id);
            update.step();
        }
        for (const Trial& trial : sweep.trials) {
            if (!trial.dirty)
                continue;
            json params = json::object(), objectives = json::array();
            for (const auto& [key, value] : trial.params)
                params[key] = value;
            for (const double value : trial.objectives)
                objectives.push_back(std::isfinite(value) ? json(value) : json());
            upsert.reset();
            upsert.bind(1, sweep.id).bind(2, static_cast<int64_t>(trial.index)).bind(3, trial.job);
            upsert.bind(4, params.dump()).bind(5, trial.state).bind(6, trial.reason);
            upsert.bind(7, static_cast<int64_t>(trial.rung)).bind(8, objectives.dump());
            real_or_null(upsert, 9, trial.best);
            real_or_null(upsert, 10, trial.last);
            real_or_null(upsert, 11, trial.watched_best);
            upsert.bind(12, trial.resource).bind(13, static_cast<int64_t>(trial.reports)).bind(14, trial.spend);
            upsert.bind(15, trial.gpu_seconds);
            real_or_null(upsert, 16, trial.watched_mean);
            upsert.step();
        }
    }
}

void SweepController::written() {
    for (auto& [id, sweep] : sweeps_) {
        sweep.dirty = false;
        for (Trial& trial : sweep.trials)
            trial.dirty = false;
    }
}

void SweepController::undo_tick() {
    // Started trials are the last of their sweeps: taken off in reverse order.
    for (auto it = started_.rbegin(); it != started_.rend(); ++it)
        if (Sweep* sweep = find(it->first);
            sweep && !sweep->trials.empty() && sweep->trials.back().index == it->second) {
            trial_of_job_.erase(sweep->trials.back().job);
            sweep->trials.pop_back();
        }
    for (const Promoted& promoted : promoted_)
        if (Sweep* sweep = find(promoted.sweep)) {
            Trial& trial = sweep->trials[static_cast<size_t>(promoted.index)];
            trial.state = "paused";
            trial.rung = promoted.rung;
        }
    started_.clear();
    promoted_.clear();
    unwritten();
}

void SweepController::unwritten() {
    // Everything in memory is rewritten by the next commit.
    for (auto& [id, sweep] : sweeps_) {
        sweep.dirty = true;
        for (Trial& trial : sweep.trials)
            trial.dirty = true;
    }
}

} // namespace traindeck::worker
