// Reproducibility (issue 19): what a run's capture holds, against a real git repository, a real content store and
// real workers; and a run reproduced on a second (TLS) worker from its snapshot.
#include "capture.h"
#include "checkpoint.h"
#include "codetransfer.h"
#include "jobchecks.h"
#include "requireall.h"
#include "tempfolder.h"
#include "workerprocess.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

using namespace traindeck::test;
using namespace traindeck::worker;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// A shell command in a folder; its output, trimmed. Fails the test when it fails.
std::string run(const std::string& folder, const std::string& command) {
    const std::string full = "cd '" + folder + "' && " + command + " 2>&1";
    FILE* pipe = ::popen(full.c_str(), "r");
    std::string output;
    char buffer[4096];
    while (pipe && std::fgets(buffer, sizeof(buffer), pipe))
        output += buffer;
    const int status = pipe ? ::pclose(pipe) : -1;
    EXPECT_EQ(status, 0) << command << ": " << output;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
        output.pop_back();
    return output;
}

bool have_git() { return std::system("git --version >/dev/null 2>&1") == 0; }

#define REQUIRE_GIT()                                                                                                  \
    if (!have_git()) {                                                                                                 \
        TRAINDECK_SKIP("git is not installed (installer/install-deps.sh installs it)");                                \
    }                                                                                                                  \
    static_assert(true)

// A repository as a user leaves it mid-experiment: a commit, an edited tracked file, an untracked helper, a
// tracked key file edited too, a secret .env, and a 1 GB data file that .gitignore names.
struct DirtyRepo {
    TempFolder folder;
    std::string root = folder.path + "/repo";
    DirtyRepo() {
        fs::create_directories(root);
        run(root, "git init -q -b main . && git config user.email t@example.com && git config user.name test");
        write(root + "/train.py", "import sys\nprint('training')\n");
        write(root + "/.gitignore", "data.bin\n");
        write(root + "/deploy.key", "-----BEGIN KEY-----\nKEYMATERIAL-one\n");
        write(root + "/données/prod.env", "DB_PASSWORD=KEYMATERIAL-three\n");
        write(root + "/src/model.py", "LAYERS = 2\n");
        run(root, "git add -A && git commit -qm first && git remote add origin "
                  "https://bob:tok-123456@example.com/lab/repo.git");
        write(root + "/train.py", "import sys\nprint('training')\n# tuned\n");
        write(root + "/deploy.key", "-----BEGIN KEY-----\nKEYMATERIAL-two\n");
        write(root + "/données/prod.env", "DB_PASSWORD=KEYMATERIAL-four\n");
        // The user's own git settings must not change what the capture reads back (prefixes, quoted paths).
        run(root,
            "git config diff.noprefix true && git config diff.mnemonicPrefix true && git config core.quotePath true");
        write(root + "/helper.py", "HELP = 1\n");
        write(root + "/.env", "API_TOKEN=hunter2-secret\n");
        run(root, "truncate -s 1G data.bin");
    }
};

std::vector<std::string> manifest_paths(traindeck::dataset::ContentStore& store, const std::string& version) {
    traindeck::dataset::Manifest manifest;
    std::string error;
    EXPECT_TRUE(store.stored_manifest(version, manifest, error)) << error;
    std::vector<std::string> paths;
    for (const auto& file : manifest.files)
        paths.push_back(file.path);
    return paths;
}

bool left_out(const json& code, const std::string& path, const std::string& why) {
    for (const json& row : code["left_out"])
        if (row["path"] == path && row["why"].get<std::string>().find(why) != std::string::npos)
            return true;
    return false;
}

} // namespace

TEST(Capture, ADirtyGitCheckoutIsCapturedWithItsDiffAndNeverItsSecrets) {
    REQUIRE_GIT();
    DirtyRepo repo;
    traindeck::dataset::ContentStore store;
    std::string error;
    ASSERT_TRUE(store.open(repo.folder.path + "/store", error)) << error;

    const json code = capture_code(repo.root + "/src", store, {});
    EXPECT_EQ(code["kind"], "git");
    EXPECT_EQ(code["commit"], run(repo.root, "git rev-parse HEAD"));
    EXPECT_EQ(code["branch"], "main");
    EXPECT_EQ(code["remote"], "https://example.com/lab/repo.git") << "credentials must be stripped";
    EXPECT_EQ(code["cwd"], "src");
    EXPECT_EQ(code["dirty"], true);
    const std::string diff = code["diff"];
    EXPECT_NE(diff.find("+# tuned"), std::string::npos) << diff;
    EXPECT_NE(diff.find("+++ b/helper.py\n@@ -0,0 +1,1 @@\n+HELP = 1"), std::string::npos)
        << "untracked files are in the diff";
    EXPECT_TRUE(code["problems"].empty()) << code["problems"];

    // The snapshot is the working tree as it is: tracked files with their edits, the untracked helper; never the
    // secrets, never what .gitignore names.
    const std::vector<std::string> paths = manifest_paths(store, code["snapshot"]);
    EXPECT_EQ(paths, (std::vector<std::string>{".gitignore", "helper.py", "src/model.py", "train.py"}));
    traindeck::dataset::Manifest manifest;
    ASSERT_TRUE(store.stored_manifest(code["snapshot"], manifest, error));
    std::string train;
    ASSERT_TRUE(store.read_chunk(manifest.find("train.py")->sha256, train));
    EXPECT_EQ(train, read_file(repo.root + "/train.py"));
    EXPECT_TRUE(left_out(code, ".env", "never captured")) << code["left_out"];
    EXPECT_TRUE(left_out(code, "deploy.key", "never captured")) << code["left_out"];
    const std::string everything = code.dump();
    for (const char* secret : {"hunter2", "KEYMATERIAL", "tok-123456"})
        EXPECT_EQ(everything.find(secret), std::string::npos) << secret << " reached the capture";
    EXPECT_EQ(everything.find("data.bin"), std::string::npos) << "an ignored file is not even looked at";
    EXPECT_EQ(code["complete"], true);
    const int64_t bytes = code["bytes"];
    EXPECT_EQ(code["stored_bytes"], bytes) << "a first capture stores every file";
    EXPECT_EQ(bytes, static_cast<int64_t>(
                         read_file(repo.root + "/train.py").size() + read_file(repo.root + "/helper.py").size() +
                         read_file(repo.root + "/src/model.py").size() + read_file(repo.root + "/.gitignore").size()));

    // Unchanged: the same snapshot, no byte stored again. One file changed: only its bytes.
    const json again = capture_code(repo.root + "/src", store, {});
    EXPECT_EQ(again["snapshot"], code["snapshot"]);
    EXPECT_EQ(again["stored_bytes"], 0);
    write(repo.root + "/helper.py", "HELP = 2  # changed\n");
    const json changed = capture_code(repo.root, store, {});
    EXPECT_NE(changed["snapshot"], code["snapshot"]);
    EXPECT_EQ(changed["stored_bytes"], static_cast<int64_t>(read_file(repo.root + "/helper.py").size()));
    EXPECT_EQ(changed["cwd"], "");

    // A pattern of the folder's own (.traindeckignore) or the worker's is never captured either, with its note.
    write(repo.root + "/.traindeckignore", "src/\n");
    CaptureLimits limits;
    limits.exclude = {"helper.*"};
    const json excluded = capture_code(repo.root, store, limits);
    EXPECT_EQ(manifest_paths(store, excluded["snapshot"]),
              (std::vector<std::string>{".gitignore", ".traindeckignore", "train.py"}));
    EXPECT_TRUE(left_out(excluded, "src/model.py", "\"src/\"")) << excluded["left_out"];
    EXPECT_TRUE(left_out(excluded, "helper.py", "\"helper.*\"")) << excluded["left_out"];
}

TEST(Capture, OutsideGitTheFolderIsSnapshotWithItsLimitsSaid) {
    TempFolder folder;
    const std::string root = folder.path + "/project";
    write(root + "/main.py", "print(1)\n");
    write(root + "/lib/util.py", "X = 1\n");
    write(root + "/lib/__pycache__/util.cpython-311.pyc", "bytecode");
    write(root + "/env/pyvenv.cfg", "home = /usr/bin\n");
    write(root + "/env/lib/site.py", "# a virtual environment's file\n");
    write(root + "/.gitignore", "*.log\n");
    write(root + "/run.log", "noise\n");
    write(root + "/weights.bin", std::string(5 << 20, 'w'));
    traindeck::dataset::ContentStore store;
    std::string error;
    ASSERT_TRUE(store.open(folder.path + "/store", error)) << error;
    const json code = capture_code(root, store, {});
    EXPECT_EQ(code["kind"], "folder");
    EXPECT_TRUE(code["dirty"].is_null()) << "outside git nothing says what is committed";
    EXPECT_EQ(manifest_paths(store, code["snapshot"]),
              (std::vector<std::string>{".gitignore", "lib/util.py", "main.py"}));
    EXPECT_TRUE(left_out(code, "weights.bin", "larger than 4 MiB")) << code["left_out"];
    EXPECT_EQ(code["complete"], false) << "a file left out for its size makes the snapshot incomplete";

    CaptureLimits few;
    few.max_files = 2;
    const json capped = capture_code(root, store, few);
    EXPECT_EQ(capped["files"], 2);
    EXPECT_TRUE(left_out(capped, "main.py", "over the snapshot's limit of 2 files")) << capped["left_out"];
}

TEST(Capture, PythonPackagesAreAskedOfTheJobsOwnInterpreter) {
    if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
        TRAINDECK_SKIP("python3-numpy is not installed (installer/install-deps.sh --tests installs it)");
    }
    TempFolder folder;
    traindeck::Environment env;
    env.set("PATH", "/usr/bin:/bin");
    EXPECT_EQ(python_interpreter({"python3", "train.py"}, env, folder.path), "/usr/bin/python3");
    EXPECT_EQ(python_interpreter({"/bin/sh", "-c", "python3 -u train.py --lr 0.1"}, env, folder.path),
              "/usr/bin/python3");
    write(folder.path + "/job.py", "#!/usr/bin/env python3\nprint(1)\n");
    EXPECT_EQ(python_interpreter({"./job.py"}, env, folder.path), "/usr/bin/python3");
    EXPECT_EQ(python_interpreter({"/bin/true"}, env, folder.path), "");

    const json system = capture_python("/usr/bin/python3", env, folder.path);
    ASSERT_TRUE(system.contains("packages")) << system.dump();
    ASSERT_TRUE(system["packages"].contains("numpy")) << system.dump();
    const json numpy = system["packages"]["numpy"];
    EXPECT_EQ(numpy["debian"], "python3-numpy");
    EXPECT_EQ(numpy["version"], run(folder.path, "/usr/bin/python3 -c 'import numpy; print(numpy.__version__)'"));
    EXPECT_EQ(numpy["debian_version"], run(folder.path, "dpkg-query -W -f='${Version}' python3-numpy"));

    // Another interpreter on the machine (a virtual environment without the system's packages) answers for itself.
    run(folder.path, "/usr/bin/python3 -m venv --without-pip venv");
    const json isolated = capture_python(folder.path + "/venv/bin/python", env, folder.path);
    ASSERT_TRUE(isolated.contains("packages")) << isolated.dump();
    EXPECT_FALSE(isolated["packages"].contains("numpy")) << isolated.dump();
    EXPECT_EQ(isolated["prefix"], folder.path + "/venv");
    const json broken = capture_python(folder.path + "/no-such-python", env, folder.path);
    EXPECT_NE(broken.value("problem", "").find("could not ask"), std::string::npos) << broken.dump();
}

TEST(Capture, SecretsInTheEnvironmentAndUrlsAreHidden) {
    const json env = redact_environment({"PATH=/usr/bin", "WANDB_API_KEY=abc", "HF_TOKEN=xyz", "MY_PASSWORD=p",
                                         "DB_URL=postgres://u:pw@db:5432/x", "LR=0.1", "AWS_SECRET_ACCESS_KEY=s"});
    EXPECT_EQ(env["PATH"], "/usr/bin");
    EXPECT_EQ(env["LR"], "0.1");
    for (const char* key : {"WANDB_API_KEY", "HF_TOKEN", "MY_PASSWORD", "AWS_SECRET_ACCESS_KEY"})
        EXPECT_EQ(env[key], "(hidden)") << key;
    EXPECT_EQ(env["DB_URL"], "postgres://db:5432/x");
    EXPECT_EQ(strip_credentials("git@github.com:lab/repo.git"), "git@github.com:lab/repo.git");
    EXPECT_EQ(strip_credentials("https://github.com/lab/repo.git"), "https://github.com/lab/repo.git");
    EXPECT_EQ(secret_rule("config/prod.env", {}), "*.env");
    EXPECT_EQ(secret_rule("home/.ssh/id_ed25519", {}), "id_ed25519*");
    EXPECT_EQ(secret_rule("src/keyboard.py", {}), "");
}

namespace {

// A deterministic script: its curve depends on the code (STEPS in src/settings.py) and on a data file in the
// repository, so a rerun from another tree shows.
const char* kScript = R"(import json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from src.settings import STEPS
scale = float(open("data/scale.txt").read())
out = os.fdopen(int(os.environ["TRAINDECK_METRICS_FD"]), "w")
loss = 2.0
for step in range(1, STEPS + 1):
    loss = loss * 0.9 + scale * ((step * 7919) % 13) / 1000.0
    out.write(json.dumps({"type": "metric", "step": step, "loss": loss}) + "\n")
out.flush()
)";

std::map<int64_t, double> curve(const std::vector<json>& events) {
    std::map<int64_t, double> points;
    for (const json& e : events)
        if (e["type"] == "record" && e["data"].value("type", "") == "metric")
            points[e["data"]["step"].get<int64_t>()] = e["data"]["loss"].get<double>();
    return points;
}

json capture_of(const std::vector<json>& events, const std::string& part) {
    json found;
    for (const json& e : events)
        if (e["type"] == "capture" && e["data"].value("part", "") == part)
            found = e["data"];
    return found;
}

bool make_certificate(const std::string& dir) {
    const std::string command = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -addext "
                                "subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout " +
                                dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
    return std::system(command.c_str()) == 0;
}

} // namespace

TEST(Capture, AScriptRunIsCapturedAndReproducedExactlyOnASecondTlsWorker) {
    REQUIRE_GIT();
    DirtyRepo repo;
    write(repo.root + "/job.py", kScript);
    write(repo.root + "/src/__init__.py", "");
    write(repo.root + "/src/settings.py", "STEPS = 40\n");
    write(repo.root + "/data/scale.txt", "1.5\n");
    if (!make_certificate(repo.folder.path)) {
        TRAINDECK_SKIP("the openssl command is not available to make a test certificate");
    }
    WorkerProcess first;
    WorkerProcess second({"--tls-cert", repo.folder.path + "/cert.pem", "--tls-key", repo.folder.path + "/key.pem"});
    ASSERT_TRUE(first.running() && second.running());
    second.use_tls(repo.folder.path + "/cert.pem");
    const json request = {{"argv", {"/usr/bin/python3", "job.py"}}, {"cwd", repo.root}};
    const int64_t original = first.submit(request);
    ASSERT_GT(original, 0) << first.last_error;
    const std::vector<json> events = first.drain(original);
    const json code = capture_of(events, "code"), environment = capture_of(events, "environment");
    ASSERT_FALSE(code.is_null()) << "no capture event; the worker said: " << read_file(first.output());
    ASSERT_FALSE(environment.is_null()) << "no environment event";
    EXPECT_EQ(code["code"]["commit"], run(repo.root, "git rev-parse HEAD"));
    EXPECT_EQ(code["code"]["dirty"], true);
    EXPECT_EQ(code["command"], json({"/usr/bin/python3", "job.py"}));
    EXPECT_FALSE(code["code"]["stored_bytes"].get<int64_t>() == 0);
    EXPECT_TRUE(environment["python"]["packages"].is_object()) << environment.dump();
    EXPECT_FALSE(environment["system"].value("os", "").empty()) << environment.dump();
    const std::map<int64_t, double> original_curve = curve(events);
    ASSERT_EQ(original_curve.size(), 40u);

    // The same tree again: the same snapshot, and not one byte of code stored a second time.
    const int64_t unchanged = first.submit(request);
    const json again = capture_of(first.drain(unchanged), "code");
    EXPECT_EQ(again["code"]["snapshot"], code["code"]["snapshot"]);
    EXPECT_EQ(again["code"]["stored_bytes"], 0);

    // The user goes on editing: the live tree no longer makes that curve.
    write(repo.root + "/src/settings.py", "STEPS = 25\n");
    write(repo.root + "/data/scale.txt", "0.5\n");

    // Reproduce on the second worker, over TLS: its snapshot moved there (only what it lacks), the job run in it.
    traindeck::client::WorkerClient& source = first.client();
    traindeck::client::WorkerClient& target = second.client();
    traindeck::client::CodeTransfer moved;
    std::string error;
    const std::string snapshot = code["code"]["snapshot"];
    ASSERT_TRUE(traindeck::client::copy_code_snapshot(source, target, snapshot, moved, error)) << error;
    EXPECT_GT(moved.chunks_sent, 0);
    EXPECT_EQ(moved.bytes_sent, code["code"]["bytes"].get<int64_t>());
    ASSERT_TRUE(traindeck::client::copy_code_snapshot(source, target, snapshot, moved, error)) << error;
    EXPECT_EQ(moved.bytes_sent, 0) << "a second copy sends nothing";

    const json reproduce = {
        {"argv", {"/usr/bin/python3", "job.py"}}, {"code", snapshot}, {"code_cwd", code["code"]["cwd"]}};
    const auto reply = target.post("/v1/jobs", reproduce);
    ASSERT_EQ(reply.status, 201) << reply.message();
    const int64_t copy = reply.json()["id"];
    const std::vector<json> reproduced = second.drain(copy);
    const json copied = capture_of(reproduced, "code");
    EXPECT_EQ(copied["code"]["kind"], "snapshot");
    EXPECT_EQ(copied["code"]["snapshot"], snapshot);
    EXPECT_EQ(copied["code"]["complete"], true) << copied["code"]["problems"];
    EXPECT_EQ(curve(reproduced), original_curve) << "the reproduced run must make the original's curve";
    EXPECT_FALSE(fs::exists(second.state_dir() + "/jobs/" + std::to_string(copy) + "/code/.env"));

    // A snapshot the worker does not hold fails the job with a message that says what to do.
    const auto unknown =
        target.post("/v1/jobs", json{{"argv", {"/usr/bin/python3", "job.py"}}, {"code", std::string(64, 'a')}});
    ASSERT_EQ(unknown.status, 201) << unknown.message();
    const json failed = second.wait_for_state(unknown.json()["id"], {"failed"});
    ASSERT_FALSE(failed.is_null());
    EXPECT_NE(failed.value("reason", "").find("send it to this worker first"), std::string::npos) << failed.dump();
}

TEST(Capture, ASourceWorkerThatSendsOtherBytesIsRefused) {
    REQUIRE_GIT();
    DirtyRepo repo;
    WorkerProcess first, second;
    const int64_t id = first.submit({{"argv", {"/bin/true"}}, {"cwd", repo.root}});
    const json code = capture_of(first.drain(id), "code");
    ASSERT_FALSE(code.is_null());
    const std::string snapshot = code["code"]["snapshot"];
    traindeck::dataset::ContentStore store;
    store.attach(first.state_dir() + "/store");
    traindeck::dataset::Manifest manifest;
    std::string error;
    ASSERT_TRUE(store.stored_manifest(snapshot, manifest, error)) << error;
    // The first worker's disk rots one chunk: it would serve other bytes under that chunk's name.
    const std::string chunk = manifest.find("train.py")->sha256;
    const std::string path = first.state_dir() + "/store/chunks/" + chunk.substr(0, 2) + "/" + chunk;
    fs::permissions(path, fs::perms::owner_write, fs::perm_options::add);
    write(path, "import os\nos.system('rm -rf ~')\n");
    traindeck::client::CodeTransfer moved;
    EXPECT_FALSE(traindeck::client::copy_code_snapshot(first.client(), second.client(), snapshot, moved, error));
    EXPECT_NE(error.find("sent other bytes for chunk"), std::string::npos) << error;
    traindeck::dataset::ContentStore target;
    target.attach(second.state_dir() + "/store");
    EXPECT_FALSE(target.has_chunk(chunk));
    EXPECT_FALSE(target.stored_manifest(snapshot, manifest, error)) << "no snapshot without all its chunks";
}

TEST(Capture, ABuiltInRunReproducedOnAnotherWorkerEndsWithBitIdenticalWeights) {
    if (!fs::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
        TRAINDECK_SKIP("dataset-fashion-mnist is not installed (installer/install-deps.sh installs it)");
    }
    WorkerProcess first, second;
    const json spec = {{"model", "mlp"},   {"hidden", {32}}, {"data", {{"dataset", "fashion-mnist"}, {"limit", 3000}}},
                       {"batch_size", 64}, {"epochs", 1},    {"seed", 11}};
    const json request = {{"builtin", spec}, {"resources", {{"cpus", 2}}}};
    const int64_t original = first.submit(request);
    const std::vector<json> events = first.drain(original);
    const json environment = capture_of(events, "environment");
    ASSERT_FALSE(environment.is_null());
    EXPECT_FALSE(environment["engine"].value("blas", "").empty()) << environment.dump();
    EXPECT_EQ(capture_of(events, "code")["resources"]["cpus"], 2);
    // The second worker says which engine build it would run, so a console can warn before a rerun that cannot
    // be bit-identical.
    EXPECT_EQ(second.client().get("/v1/resources").json()["engine"], environment["engine"]);
    const int64_t copy = second.submit(request);
    second.drain(copy);
    auto weights = [](const WorkerProcess& worker, int64_t id) {
        auto found = traindeck::engine::find_latest_checkpoint(worker.state_dir() + "/jobs/" + std::to_string(id) +
                                                               "/checkpoints");
        return found && !found->path.empty() ? found->checkpoint.params : std::vector<float>{};
    };
    const std::vector<float> a = weights(first, original), b = weights(second, copy);
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(a, b);
}
