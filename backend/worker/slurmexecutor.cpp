// The Slurm executor: the Executor interface over sbatch/squeue/scancel or slurmrestd.
#include "slurmexecutor.h"

#include "atomicfile.h"
#include "clock.h"
#include "jobshim.h"
#include "process.h"
#include "workerclient.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace traindeck::worker {

using nlohmann::json;

namespace {

std::string batch_script(const std::string& shim, const std::string& dir) {
    auto quote = [](const std::string& word) {
        std::string out = "'";
        for (char c : word)
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return out + "'";
    };
    // The shim reads the job's argv and environment from launch.json: the script only starts it.
    return "#!/bin/sh\nexec " + quote(shim) + " --run-job " + quote(dir) + "\n";
}

} // namespace

SlurmExecutor::SlurmExecutor(SlurmSettings settings, std::string self_binary)
    : settings_(std::move(settings)), self_binary_(std::move(self_binary)) {
    if (!settings_.rest_url.empty())
        client_ = std::make_unique<client::WorkerClient>(settings_.rest_url, "");
}

SlurmExecutor::~SlurmExecutor() = default;

std::string SlurmExecutor::describe() const {
    return settings_.rest_url.empty() ? "Slurm through sbatch/squeue/scancel" : "Slurm through slurmrestd at " + settings_.rest_url;
}

bool SlurmExecutor::is_active(const std::string& state) {
    return state == "PENDING" || state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING" ||
           state == "SUSPENDED" || state == "REQUEUED" || state == "RESIZING" || state == "SIGNALING" || state == "STAGE_OUT";
}

std::string SlurmExecutor::token(std::string& error) const {
    if (!settings_.token_file.empty()) {
        std::ifstream in(settings_.token_file);
        std::string text;
        if (in >> text)
            return text.rfind("SLURM_JWT=", 0) == 0 ? text.substr(10) : text;
        error = "cannot read the Slurm JWT from " + settings_.token_file + " (make one with: scontrol token)";
        return {};
    }
    if (const char* env = std::getenv("SLURM_JWT"); env && *env)
        return env;
    error = "slurmrestd needs a JWT: give --slurm-token-file or set SLURM_JWT (scontrol token username=...)";
    return {};
}

bool SlurmExecutor::rest(const std::string& method, const std::string& path, const std::string& body, std::string& reply,
                         std::string& error) {
    const std::string jwt = token(error);
    if (jwt.empty())
        return false;
    client_->set_headers({"X-SLURM-USER-NAME: " + settings_.user, "X-SLURM-USER-TOKEN: " + jwt});
    const client::HttpResponse response = method == "GET"    ? client_->get(path)
                                          : method == "POST" ? client_->post(path, body)
                                                             : client_->del(path);
    reply = response.body;
    const json parsed = json::parse(response.body, nullptr, false);
    std::string slurm_errors;
    if (parsed.is_object() && parsed.contains("errors") && parsed["errors"].is_array())
        for (const json& e : parsed["errors"])
            if (e.is_object())
                slurm_errors += (slurm_errors.empty() ? "" : "; ") + e.value("error", e.value("description", e.dump()));
    if (!response.ok() || !slurm_errors.empty()) {
        error = "slurmrestd " + method + " " + path + ": " + (slurm_errors.empty() ? response.message() : slurm_errors);
        return false;
    }
    return true;
}

bool SlurmExecutor::command(std::vector<std::string> argv, std::string& output, std::string& error) const {
    SpawnOptions tool;
    tool.argv = argv;
    tool.environment = Environment::current();
    tool.environment->erase("SLURM_CONF");
    if (!settings_.conf.empty())
        tool.environment->set("SLURM_CONF", settings_.conf);
    tool.search_path = true;
    ProgramResult result = run_program(tool, {.seconds = 120, .merge_stderr = true});
    output = std::move(result.output);
    if (!result.started) {
        error = result.error + " (is slurm-client installed?)";
        return false;
    }
    if (!result.ok()) {
        error = argv[0] + (result.timed_out ? " did not answer within 120 s: " : " failed: ") + output;
        while (!error.empty() && (error.back() == '\n' || error.back() == ' '))
            error.pop_back();
        return false;
    }
    return true;
}

std::string SlurmExecutor::submit(const std::string& shim, const std::string& dir, const JobRequest& request,
                                  std::string& error) {
    const Resources& r = request.resources;
    const std::string name = "traindeck-" + (request.name.empty() ? std::string("job") : request.name);
    if (client_) {
        json job = {{"name", name},
                    {"tasks", 1},
                    {"cpus_per_task", std::max(1, r.cpus)},
                    {"current_working_directory", dir},
                    {"standard_output", dir + "/slurm.out"},
                    {"standard_error", dir + "/slurm.out"},
                    {"environment", {{"PATH", "/usr/local/bin:/usr/bin:/bin"}}}};
        if (!settings_.partition.empty())
            job["partition"] = settings_.partition;
        if (r.memory_mb > 0)
            job["memory_per_node"] = r.memory_mb;
        if (r.gpus > 0)
            job["gres"] = "gpu:" + std::to_string(r.gpus);
        if (r.time_minutes > 0)
            job["time_limit"] = r.time_minutes;
        std::string reply;
        if (!rest("POST", "/slurm/v0.0.38/job/submit", json{{"script", batch_script(shim, dir)}, {"job", job}}.dump(), reply, error))
            return {};
        const json parsed = json::parse(reply, nullptr, false);
        if (!parsed.is_object() || !parsed.contains("job_id") || !parsed["job_id"].is_number()) {
            error = "slurmrestd accepted the job but sent no job_id: " + reply.substr(0, 200);
            return {};
        }
        return std::to_string(parsed["job_id"].get<int64_t>());
    }
    // sbatch reads the script from a file in the job folder (kept for the user to read).
    const std::string script = dir + "/slurm-batch.sh";
    {
        std::ofstream out(script);
        out << batch_script(shim, dir);
        if (!out) {
            error = "cannot write " + script;
            return {};
        }
    }
    std::vector<std::string> argv = {"sbatch", "--parsable", "--job-name=" + name, "--chdir=" + dir,
                                      "--output=" + dir + "/slurm.out", "--ntasks=1",
                                      "--cpus-per-task=" + std::to_string(std::max(1, r.cpus)), "--export=PATH"};
    if (const passwd* self = ::getpwuid(::geteuid()); !settings_.user.empty() && (!self || settings_.user != self->pw_name))
        argv.push_back("--uid=" + settings_.user); // only root may; sbatch says so clearly otherwise
    if (!settings_.partition.empty())
        argv.push_back("--partition=" + settings_.partition);
    if (r.memory_mb > 0)
        argv.push_back("--mem=" + std::to_string(r.memory_mb));
    if (r.gpus > 0)
        argv.push_back("--gres=gpu:" + std::to_string(r.gpus));
    if (r.time_minutes > 0)
        argv.push_back("--time=" + std::to_string(r.time_minutes));
    argv.push_back(script);
    std::string output;
    if (!command(argv, output, error))
        return {};
    std::string id = output.substr(0, output.find_first_of(";\n"));
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) {
        error = "sbatch printed no job id: " + output;
        return {};
    }
    return id;
}

bool SlurmExecutor::states(std::map<std::string, State>& out, std::string& error) {
    out.clear();
    if (client_) {
        std::string reply;
        if (!rest("GET", "/slurm/v0.0.38/jobs", "", reply, error))
            return false;
        const json parsed = json::parse(reply, nullptr, false);
        if (!parsed.is_object() || !parsed.contains("jobs") || !parsed["jobs"].is_array()) {
            error = "slurmrestd sent no job list";
            return false;
        }
        for (const json& job : parsed["jobs"])
            if (job.is_object() && job.contains("job_id") && job["job_id"].is_number())
                out[std::to_string(job["job_id"].get<int64_t>())] = {job.value("job_state", ""), job.value("state_reason", "")};
        return true;
    }
    std::string output;
    if (!command({"squeue", "-h", "-t", "all", "-o", "%i|%T|%r"}, output, error))
        return false;
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        const size_t a = line.find('|'), b = line.find('|', a + 1);
        if (a != std::string::npos && b != std::string::npos)
            out[line.substr(0, a)] = {line.substr(a + 1, b - a - 1), line.substr(b + 1)};
    }
    return true;
}

bool SlurmExecutor::cluster(Cluster& out, std::string& error) const {
    std::string output;
    if (!command({"sinfo", "-h", "-o", "%C|%D"}, output, error))
        return false;
    // One line per partition state group: "A/I/O/T|nodes"; the default output may hold several lines.
    out = {};
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);) {
        int allocated = 0, idle = 0, other = 0, total = 0, nodes = 0;
        if (std::sscanf(line.c_str(), "%d/%d/%d/%d|%d", &allocated, &idle, &other, &total, &nodes) == 5) {
            out.cpus_allocated += allocated;
            out.cpus_idle += idle;
            out.cpus_total += total;
            out.nodes += nodes;
        }
    }
    return out.cpus_total > 0;
}

bool SlurmExecutor::cancel(const std::string& id, std::string& error) {
    if (client_) {
        std::string reply;
        return rest("DELETE", "/slurm/v0.0.38/job/" + id, "", reply, error);
    }
    std::string output;
    return command({"scancel", id}, output, error);
}

void SlurmExecutor::set_visible_gpus(Environment& env, const std::vector<int>&) const {
    env.erase("CUDA_VISIBLE_DEVICES"); // Slurm sets it on the node for the GPUs it allocated
}

bool SlurmExecutor::start(JobRun& run, const std::string& dir, const JobRequest& request, std::string& error) {
    ::unlink((dir + "/signal").c_str());
    ::unlink((dir + "/signal.sent").c_str());
    run.cluster_id = submit(self_binary_, dir, request, error);
    if (run.cluster_id.empty())
        return false;
    run.shim = -1;
    run.cluster_gone_since = 0;
    // Kept with the job's files so that a restarted worker re-adopts it.
    return write_file_atomically(dir + "/slurm_job", run.cluster_id + "\n", 0600, error);
}

std::string SlurmExecutor::where(const JobRun& run) const { return " (Slurm job " + run.cluster_id + ")"; }

bool SlurmExecutor::adopt(JobRun& run, const std::string& dir) {
    std::ifstream in(dir + "/slurm_job");
    in >> run.cluster_id;
    return !run.cluster_id.empty() || shim_alive(run.shim, dir);
}

void SlurmExecutor::refresh(const std::vector<const JobRun*>& runs) {
    bool any = false;
    for (const JobRun* run : runs)
        any = any || !run->cluster_id.empty();
    if (!any)
        return;
    std::string error;
    states_ok_ = states(states_, error);
    if (!states_ok_ && error != states_error_)
        std::fprintf(stderr, "traindeck-worker: cannot ask Slurm for job states: %s\n", error.c_str());
    states_error_ = states_ok_ ? std::string() : error;
}

// Mirrors Slurm's view into the job's reason; ended when Slurm has ended the job for a few seconds, so that an exit
// status written just before is read first.
Executor::Check SlurmExecutor::check(JobRun& run, const std::string& dir, const std::string& reason) {
    if (run.cluster_id.empty()) {
        // Not (or no longer) a Slurm job: a shim left here by a local run, if any.
        if (run.shim > 0 && !shim_alive(run.shim, dir))
            return {true, "the job's supervisor process vanished without recording an exit", {}};
        return {};
    }
    if (!states_ok_)
        return {}; // Slurm cannot be asked right now: nothing is concluded from silence
    const auto it = states_.find(run.cluster_id);
    const std::string state = it == states_.end() ? "GONE" : it->second.state;
    if (is_active(state)) {
        run.cluster_gone_since = 0;
        const std::string now = state == "PENDING" ? "pending in Slurm job " + run.cluster_id + " (" + it->second.reason + ")"
                                                   : "running in Slurm job " + run.cluster_id;
        Check check;
        if (reason != now && (state == "PENDING" || reason.rfind("pending in Slurm", 0) == 0))
            check.reason = now;
        return check;
    }
    if (run.cluster_gone_since == 0)
        run.cluster_gone_since = wall_seconds();
    if (wall_seconds() - run.cluster_gone_since <= 3.0)
        return {};
    return {true,
            "Slurm job " + run.cluster_id + " ended (" + (it == states_.end() ? std::string() : it->second.state) +
                ") without recording an exit",
            {}};
}

void SlurmExecutor::signal(const JobRun& run, const std::string& dir, int signal) {
    if (run.shim > 0)
        ::kill(-run.shim, signal);
    if (!run.cluster_id.empty()) {
        // On a cluster node only the shim can reach the job: it forwards what it finds in its signal file.
        std::string error;
        write_file_atomically(dir + "/signal", std::to_string(signal) + "\n", 0600, error);
    }
}

std::string SlurmExecutor::kill(const JobRun& run) {
    if (run.shim > 0)
        ::kill(-run.shim, SIGKILL);
    std::string error;
    if (!run.cluster_id.empty() && !cancel(run.cluster_id, error))
        return error;
    return {};
}

void SlurmExecutor::describe_resources(json& answer) {
    // Jobs run on the cluster, not here: report its size (sinfo, refreshed every 30 s).
    answer["executor"] = describe();
    if (wall_seconds() - cluster_time_ > 30) {
        std::string error;
        if (!cluster(cluster_, error))
            cluster_ = {};
        cluster_time_ = wall_seconds();
    }
    if (cluster_.cpus_total > 0) {
        answer["cpus"] = cluster_.cpus_total;
        answer["cluster"] = {{"nodes", cluster_.nodes}, {"cpus_total", cluster_.cpus_total},
                             {"cpus_allocated", cluster_.cpus_allocated}, {"cpus_idle", cluster_.cpus_idle}};
    }
}

} // namespace traindeck::worker
